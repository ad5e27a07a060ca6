// Drives Debian's Chromium over the DevTools protocol (puppeteer-core)
// against a running `annal serve`, for cli/tests/ui.rs and bench/ui.sh.
//
// Reads a plan as JSON on stdin:
//   {"base": "http://127.0.0.1:PORT", "chromium": "/usr/bin/chromium",
//    "shots": "DIR" (optional), "cookie": "annal_token=..." (optional),
//    "pages": [{"name": "fleet", "path": "/ui/fleet?...",
//               "fill": {"input[name=at]": "2026-11-01T10:30:00Z"} (optional),
//               "submit": "form.controls button" (optional),
//               "click": "#versions thead th:nth-child(1) button" (optional),
//               "keys": 1 (optional: on load, press Tab this many times and report the focus)}]}
// and prints one JSON line per page: its final URL, HTTP status, every
// console error, page error, failed request and CSP violation, the
// document's HTML, first contentful paint, the server's time to the first
// byte, the bytes transferred, and what has the keyboard focus.
import puppeteer from "puppeteer-core";

const input = await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (d) => (text += d));
  process.stdin.on("end", () => resolve(text));
});
const plan = JSON.parse(input);

const browser = await puppeteer.launch({
  executablePath: plan.chromium || "/usr/bin/chromium",
  headless: true,
  // The flags this machine's closed network needs (docs in reports.rs).
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
  ],
  defaultViewport: { width: 1280, height: 800 },
});

try {
  for (const spec of plan.pages) {
    const page = await browser.newPage();
    await page.setCacheEnabled(false);
    const problems = [];
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warn") problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    const outside = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(plan.base) && !r.url().startsWith("data:")) outside.push(r.url());
    });
    if (plan.cookie) {
      const [name, value] = plan.cookie.split("=");
      await page.setCookie({ name, value, url: plan.base + "/ui/", httpOnly: true, sameSite: "Strict" });
    }
    const response = await page.goto(plan.base + spec.path, { waitUntil: "networkidle0" });
    const status = response ? response.status() : 0;
    const timing = await page.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0];
      const paint = performance.getEntriesByName("first-contentful-paint")[0];
      const resources = performance.getEntriesByType("resource");
      return {
        fcp_ms: paint ? paint.startTime : null,
        server_ms: nav ? nav.responseStart - nav.requestStart : null,
        bytes: (nav ? nav.transferSize : 0) + resources.reduce((n, r) => n + r.transferSize, 0),
      };
    });
    let focus = null;
    if (spec.keys) {
      for (let i = 0; i < spec.keys; i++) await page.keyboard.press("Tab");
      focus = await page.evaluate(() => {
        const el = document.activeElement;
        return el ? `${el.tagName.toLowerCase()} ${el.getAttribute("href") || el.getAttribute("name") || ""}`.trim() : null;
      });
    }
    if (spec.fill) {
      for (const [selector, value] of Object.entries(spec.fill)) {
        await page.$eval(selector, (el) => (el.value = ""));
        await page.type(selector, value);
      }
    }
    const settle = async () => {
      await page.waitForNetworkIdle({ idleTime: 100 });
      await page.waitForFunction(() => !document.querySelector(".htmx-request"));
    };
    if (spec.submit) {
      await page.click(spec.submit);
      await settle();
    }
    if (spec.click) {
      await page.click(spec.click);
      await settle();
    }
    if (plan.shots) {
      await page.screenshot({ path: `${plan.shots}/${spec.name}.png`, fullPage: false });
    }
    const html = await page.content();
    console.log(
      JSON.stringify({
        name: spec.name,
        url: page.url(),
        status,
        problems,
        outside,
        html,
        focus,
        ...timing,
      }),
    );
    await page.close();
  }
} finally {
  await browser.close();
}
