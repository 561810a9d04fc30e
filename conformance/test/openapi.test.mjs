// The OpenAPI document (docs/openapi.json, and what the daemon serves at
// /openapi.json) is valid OpenAPI 3.1 to a third-party validator.
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import SwaggerParser from '@apidevtools/swagger-parser'
import { HUTCH_URL } from '../lib.mjs'

describe('OpenAPI', () => {
  test('docs/openapi.json and /openapi.json validate', async () => {
    const checkedIn = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url)))
    const served = await (await fetch(HUTCH_URL + '/openapi.json')).json()
    assert.deepEqual(served.paths ? Object.keys(served.paths).sort() : [], Object.keys(checkedIn.paths).sort())
    for (const doc of [checkedIn, served]) {
      const api = await SwaggerParser.validate(structuredClone(doc))
      assert.equal(api.openapi, '3.1.0')
    }
    assert.ok(checkedIn.paths['/v1/sandboxes/{id}/exec'].post.requestBody)
  })
})
