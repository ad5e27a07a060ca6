//! What annal's SQL may do: read the ledger's tables, nothing else.
//!
//! The ledger exists so that nobody can rewrite history; its SQL must not
//! give a reader a way to change the machine that keeps it. So every
//! statement is planned first and its *logical plan* is checked before any
//! of it runs: a plan holding DDL (`CREATE`, `DROP`, `CREATE EXTERNAL
//! TABLE`), DML (`INSERT`, `COPY ... TO`, `DELETE`, `UPDATE`) or a session
//! statement (`SET`, `BEGIN`, `PREPARE`) anywhere, `EXPLAIN ANALYZE` and
//! subqueries included, is refused with a message naming what is not
//! allowed. This is the planner's view, not a look at the text, so no
//! spelling, comment or nesting gets past it. DataFusion's own
//! [`SQLOptions`] check runs after ours as a second line (it refuses the
//! same classes, with a less helpful message).
//!
//! Reading files through SQL is off as well: URL tables
//! (`SELECT * FROM '/etc/passwd'`) are never enabled on annal's sessions
//! (see `super::session_with`), and without `CREATE EXTERNAL TABLE` no file
//! can be registered.

use datafusion::common::tree_node::{TreeNodeRecursion, TreeNodeVisitor};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SQLOptions;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, Statement, WriteOp};

/// Why a statement was refused: what it tried, and what to use instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The statement, as SQL names it (`COPY`, `CREATE EXTERNAL TABLE`).
    pub statement: &'static str,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is not allowed: annal's SQL is read-only (queries only: SELECT, WITH, \
             EXPLAIN, SHOW, DESCRIBE)",
            self.statement
        )?;
        match self.statement {
            "COPY" => write!(f, "; use `annal export` to write Parquet"),
            "CREATE EXTERNAL TABLE" => {
                write!(f, "; only the ledger's own tables can be read")
            }
            _ => Ok(()),
        }
    }
}

/// The first statement in `plan` that is not a query, if any.
pub fn check(plan: &LogicalPlan) -> std::result::Result<(), Refused> {
    let mut visitor = FirstWrite(None);
    // The visitor never fails; an error here would be DataFusion's own.
    let visited = plan.visit_with_subqueries(&mut visitor);
    match (visitor.0, visited) {
        (Some(statement), _) => Err(Refused { statement }),
        (None, Ok(_)) => Ok(()),
        (None, Err(_)) => Err(Refused {
            statement: "a statement that cannot be checked",
        }),
    }
}

/// DataFusion's own read-only check, the second line behind [`check`].
pub fn verify_with_datafusion(plan: &LogicalPlan) -> Result<()> {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
        .verify_plan(plan)
}

struct FirstWrite(Option<&'static str>);

impl<'n> TreeNodeVisitor<'n> for FirstWrite {
    type Node = LogicalPlan;

    fn f_down(&mut self, node: &'n LogicalPlan) -> Result<TreeNodeRecursion, DataFusionError> {
        let refused = match node {
            LogicalPlan::Ddl(ddl) => Some(ddl_name(ddl)),
            LogicalPlan::Dml(dml) => Some(match &dml.op {
                WriteOp::Insert(_) => "INSERT",
                WriteOp::Delete => "DELETE",
                WriteOp::Update => "UPDATE",
                WriteOp::Ctas => "CREATE TABLE AS",
                WriteOp::Truncate => "TRUNCATE",
                WriteOp::MergeInto(_) => "MERGE",
                // `WriteOp` is non-exhaustive: whatever writes is refused.
                _ => "a data modification statement",
            }),
            LogicalPlan::Copy(_) => Some("COPY"),
            LogicalPlan::Statement(statement) => Some(match statement {
                Statement::TransactionStart(_) => "BEGIN",
                Statement::TransactionEnd(_) => "COMMIT/ROLLBACK",
                Statement::SetVariable(_) => "SET",
                Statement::ResetVariable(_) => "RESET",
                Statement::Prepare(_) => "PREPARE",
                Statement::Execute(_) => "EXECUTE",
                Statement::Deallocate(_) => "DEALLOCATE",
            }),
            _ => None,
        };
        match refused {
            Some(name) => {
                self.0 = Some(name);
                Ok(TreeNodeRecursion::Stop)
            }
            None => Ok(TreeNodeRecursion::Continue),
        }
    }
}

fn ddl_name(ddl: &DdlStatement) -> &'static str {
    match ddl {
        DdlStatement::CreateExternalTable(_) => "CREATE EXTERNAL TABLE",
        DdlStatement::CreateMemoryTable(_) => "CREATE TABLE",
        DdlStatement::CreateView(_) => "CREATE VIEW",
        DdlStatement::CreateCatalogSchema(_) => "CREATE SCHEMA",
        DdlStatement::CreateCatalog(_) => "CREATE DATABASE",
        DdlStatement::CreateIndex(_) => "CREATE INDEX",
        DdlStatement::DropTable(_) => "DROP TABLE",
        DdlStatement::DropView(_) => "DROP VIEW",
        DdlStatement::DropCatalogSchema(_) => "DROP SCHEMA",
        DdlStatement::CreateFunction(_) => "CREATE FUNCTION",
        DdlStatement::DropFunction(_) => "DROP FUNCTION",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{SessionConfig, SessionContext};

    async fn plan(sql: &str) -> LogicalPlan {
        let config = SessionConfig::new().with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        ctx.sql("CREATE TABLE t (a INT)").await.unwrap();
        ctx.state().create_logical_plan(sql).await.unwrap()
    }

    #[tokio::test]
    async fn every_kind_of_write_is_named_and_queries_pass() {
        let refused = [
            ("COPY (SELECT 1 AS a) TO '/tmp/x.csv'", "COPY"),
            ("COPY t TO '/tmp/x.parquet' STORED AS PARQUET", "COPY"),
            (
                "CREATE EXTERNAL TABLE p STORED AS CSV LOCATION '/etc/passwd'",
                "CREATE EXTERNAL TABLE",
            ),
            ("CREATE TABLE u AS SELECT 1", "CREATE TABLE"),
            ("CREATE TABLE u (a INT)", "CREATE TABLE"),
            ("CREATE VIEW v AS SELECT 1", "CREATE VIEW"),
            ("CREATE SCHEMA s", "CREATE SCHEMA"),
            ("DROP TABLE t", "DROP TABLE"),
            ("DROP VIEW IF EXISTS v", "DROP VIEW"),
            ("INSERT INTO t VALUES (1)", "INSERT"),
            ("SET datafusion.execution.target_partitions = 64", "SET"),
            ("RESET datafusion.execution.batch_size", "RESET"),
            ("START TRANSACTION", "BEGIN"),
            ("COMMIT", "COMMIT/ROLLBACK"),
            ("PREPARE q(INT) AS SELECT $1", "PREPARE"),
            // Wrapped: EXPLAIN ANALYZE runs what it explains.
            (
                "EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '/tmp/y.csv'",
                "COPY",
            ),
            ("EXPLAIN INSERT INTO t VALUES (2)", "INSERT"),
            // Case and comments make no difference to a plan.
            (
                "/* hi */ cOpY (select 1 as a) -- x\n TO '/tmp/z.csv'",
                "COPY",
            ),
        ];
        for (sql, statement) in refused {
            let plan = plan(sql).await;
            assert_eq!(check(&plan), Err(Refused { statement }), "{sql}");
            assert!(verify_with_datafusion(&plan).is_err(), "{sql}");
        }
        for sql in [
            "SELECT 1",
            "WITH x AS (SELECT a FROM t) SELECT count(*) FROM x",
            "SELECT * FROM t WHERE a IN (SELECT a FROM t)",
            "EXPLAIN SELECT * FROM t",
            "EXPLAIN ANALYZE SELECT * FROM t",
            "SHOW TABLES",
            "DESCRIBE t",
            "SELECT * FROM generate_series(1, 3)",
        ] {
            let plan = plan(sql).await;
            assert_eq!(check(&plan), Ok(()), "{sql}");
            assert!(verify_with_datafusion(&plan).is_ok(), "{sql}");
        }
    }

    #[test]
    fn the_message_says_what_to_use_instead() {
        let copy = Refused { statement: "COPY" }.to_string();
        assert!(copy.starts_with("COPY is not allowed: annal's SQL is read-only"));
        assert!(copy.contains("annal export"), "{copy}");
        let set = Refused { statement: "SET" }.to_string();
        assert!(set.starts_with("SET is not allowed"), "{set}");
    }
}
