// A headless browser for the console tests: Debian's chromium driven by
// puppeteer-core, with one page whose console errors and uncaught page
// errors go to errors (each test asserts it stays empty).
import puppeteer from 'puppeteer-core'

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'

// openPage launches the browser and opens its page.
export async function openPage (errors) {
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Tests run as root, where chromium's own sandbox cannot start.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--window-size=1280,900'],
    defaultViewport: { width: 1280, height: 900 }
  })
  const page = await browser.newPage()
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`) })
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`))
  return { browser, page }
}
