// Prints the counts of vitest JSON reports (run.sh) and each failing test.
import { readFileSync } from 'node:fs'

let passed = 0
let failed = 0
const failures = []
for (const file of process.argv.slice(2)) {
  const report = JSON.parse(readFileSync(file, 'utf8'))
  for (const f of report.testResults) {
    const name = f.name.replace(/.*js-sdk\//, '')
    if (f.assertionResults.length === 0 && f.status === 'failed') failures.push(`${name}: ${(f.message || '').split('\n')[0]}`)
    for (const a of f.assertionResults) {
      if (a.status === 'passed') passed++
      else if (a.status === 'failed') {
        failed++
        failures.push(`${name} > ${a.title}: ${(a.failureMessages[0] || '').split('\n')[0].slice(0, 200)}`)
      }
    }
  }
}
for (const f of failures) console.log('FAIL', f)
console.log(`e2b-sdk-suite: ${passed} passed, ${failed} failed of ${passed + failed}`)
