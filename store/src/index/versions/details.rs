//! Version details: what an answer shows about a version beyond its row.
//!
//! A compact length-prefixed encoding rather than JSON: a fleet-wide
//! inventory decodes a million of these per question.

use annal_schemas::ownership::{Claim, Marker};

use crate::StoreError;

/// What one object version said about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionDetails {
    /// `apiVersion` as observed.
    pub api_version: String,
    /// `metadata.uid` ("" when absent).
    pub uid: String,
    /// `metadata.resourceVersion` as text ("" when absent).
    pub resource_version: String,
    /// Claims from the object's own labels and annotations.
    pub claims: Vec<Claim>,
    /// A tracking id that names another object (a copied annotation).
    pub tracking_mismatch: Option<String>,
    /// Field managers (from managedFields), sorted, distinct.
    pub managers: Vec<String>,
}

/// The bytes [`encode`] appends for `d` (so that its buffer is allocated
/// once, not grown five times).
pub(crate) fn encoded_len(d: &VersionDetails) -> usize {
    let s = |t: &str| 4 + t.len();
    4 + s(&d.api_version)
        + s(&d.uid)
        + s(&d.resource_version)
        + 4
        + d.claims
            .iter()
            .map(|c| s(&c.owner) + s(c.marker.as_str()))
            .sum::<usize>()
        + 1
        + d.tracking_mismatch.as_deref().map_or(0, s)
        + 4
        + d.managers.iter().map(|m| s(m)).sum::<usize>()
}

/// Appends `d` as `u32 length ‖ fields`.
pub(crate) fn encode(d: &VersionDetails, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    put_str(out, &d.api_version);
    put_str(out, &d.uid);
    put_str(out, &d.resource_version);
    put_len(out, d.claims.len());
    for c in &d.claims {
        put_str(out, &c.owner);
        put_str(out, c.marker.as_str());
    }
    match &d.tracking_mismatch {
        Some(t) => {
            out.push(1);
            put_str(out, t);
        }
        None => out.push(0),
    }
    put_len(out, d.managers.len());
    for m in &d.managers {
        put_str(out, m);
    }
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// Decodes the record at `offset` of a details file.
pub(crate) fn decode(file: &[u8], offset: u64) -> Result<VersionDetails, StoreError> {
    let mut r = Reader {
        bytes: file,
        at: usize::try_from(offset).map_err(|_| corrupt())?,
    };
    let len = r.len()?;
    let end = r.at.checked_add(len).ok_or_else(corrupt)?;
    let mut d = VersionDetails {
        api_version: r.str()?,
        uid: r.str()?,
        resource_version: r.str()?,
        ..VersionDetails::default()
    };
    for _ in 0..r.len()? {
        let owner = r.str()?;
        let marker = Marker::parse(&r.str()?).ok_or_else(corrupt)?;
        d.claims.push(Claim { owner, marker });
    }
    if r.byte()? == 1 {
        d.tracking_mismatch = Some(r.str()?);
    }
    for _ in 0..r.len()? {
        d.managers.push(r.str()?);
    }
    if r.at != end {
        return Err(corrupt());
    }
    Ok(d)
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u32).to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn corrupt() -> StoreError {
    StoreError::Corrupt("bad version details record".into())
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], StoreError> {
        let end = self.at.checked_add(n).ok_or_else(corrupt)?;
        let out = self.bytes.get(self.at..end).ok_or_else(corrupt)?;
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, StoreError> {
        Ok(self.take(1)?[0])
    }

    fn len(&mut self) -> Result<usize, StoreError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn str(&mut self) -> Result<String, StoreError> {
        let n = self.len()?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| corrupt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_round_trip_and_truncation_is_an_error() {
        let d = VersionDetails {
            api_version: "apps/v1".into(),
            uid: "u-1".into(),
            resource_version: "12".into(),
            claims: vec![Claim {
                owner: "argocd:shop".into(),
                marker: Marker::TrackingId,
            }],
            tracking_mismatch: Some("other:apps/Deployment:x/y".into()),
            managers: vec!["argocd-controller".into(), "kubectl".into()],
        };
        let mut file = b"junk".to_vec();
        encode(&d, &mut file);
        assert_eq!(file.len(), 4 + encoded_len(&d));
        assert_eq!(decode(&file, 4).unwrap(), d);
        assert!(decode(&file[..file.len() - 1], 4).is_err());
        assert!(decode(&file, 0).is_err());
    }
}
