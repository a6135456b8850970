import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  builtInDetectors,
  type OperatorPattern,
  resolveSecrets,
  type SecretPolicy,
  type SecretRules,
  type SecretsOptions,
  WORKER_SECRETS_DEFAULT,
} from '../../src/plugins/secrets'

/**
 * The `secrets` option resolved: per model, which detectors substitute and which only count; a bad
 * option throws at construction naming the option (a typo must not leave a secret in the prompt);
 * the precedence model kind > guard kind > model confidence > guard confidence > off holds for any
 * rules; kinds and models named like Object.prototype members are plain names.
 */

const BUILT_IN = builtInDetectors()
const KINDS = [...new Set(BUILT_IN.map((d) => d.kind))]
const POLICIES: readonly SecretPolicy[] = ['off', 'detect', 'substitute']

/** Kind → policy for one model, read back from the split. */
function policies(options: SecretsOptions, model: string): Map<string, SecretPolicy> {
  const resolved = resolveSecrets(options)!
  const { substitute, detect } = resolved.forModel(model)
  const out = new Map<string, SecretPolicy>()
  for (const d of resolved.all) out.set(d.kind, 'off')
  for (const d of detect) out.set(d.kind, 'detect')
  for (const d of substitute) out.set(d.kind, 'substitute')
  return out
}

/** `{ [kind]: policy }` for any kind name. */
function kindEntry(kind: string, policy: SecretPolicy): Record<string, SecretPolicy> {
  return Object.fromEntries([[kind, policy]])
}

function throwsNaming(options: unknown, message: string | RegExp): void {
  expect(() => resolveSecrets(options as SecretsOptions)).toThrow(message)
}

describe('resolveSecrets: validation', () => {
  it('should resolve undefined to undefined (the library default: everything off)', () => {
    expect(resolveSecrets(undefined)).toBeUndefined()
  })

  it('should refuse a secrets option that is not an object', () => {
    throwsNaming(null, 'option "secrets" must be an object')
    throwsNaming('substitute', 'option "secrets" must be an object')
    throwsNaming({ patterns: 'ACME-[0-9]{8}' }, 'option "secrets.patterns" must be an array')
  })

  it('should refuse a bad policy, naming the option and the field', () => {
    throwsNaming({ high: 'redact' }, 'option "secrets.high" must be one of off, detect, substitute')
    throwsNaming({ medium: null }, 'option "secrets.medium" must be one of')
    throwsNaming(
      { kinds: { 'us-ssn': 'Substitute' } },
      'option "secrets.kinds["us-ssn"]" must be one of off, detect, substitute',
    )
    throwsNaming(
      { models: { '@cf/meta/llama': { high: 'on' } } },
      'option "secrets.models["@cf/meta/llama"].high" must be one of',
    )
    throwsNaming(
      { kinds: { 'us-ssn': 'constructor' } },
      'option "secrets.kinds["us-ssn"]" must be one of',
    )
  })

  it('should refuse an unknown kind, listing the known ones', () => {
    throwsNaming(
      { kinds: { 'us-sn': 'off' } },
      /option "secrets.kinds": unknown kind "us-sn" \(known: private-key, .*us-ssn/,
    )
    throwsNaming(
      { models: { m: { kinds: { card: 'detect' } } } },
      'option "secrets.models["m"].kinds": unknown kind "card"',
    )
  })

  it('should refuse rules of a model that are not an object', () => {
    throwsNaming({ models: { m: 'off' } }, 'option "secrets.models["m"]" must be an object')
    throwsNaming({ models: { m: null } }, 'option "secrets.models["m"]" must be an object')
  })

  it('should refuse a bad operator pattern, naming its index and the reason', () => {
    throwsNaming(
      {
        patterns: [
          { name: 'acme', pattern: 'ACME-[0-9]{8}' },
          { name: 'bad', pattern: '(a+)+b' },
        ],
      },
      /option "secrets.patterns\[1\]": secret pattern "bad": unbounded quantifier "\+"/,
    )
    throwsNaming(
      { patterns: [{ name: 'Acme', pattern: 'ACME-[0-9]{8}' }] },
      'option "secrets.patterns[0]": secret pattern "Acme": name must match',
    )
    throwsNaming(
      { patterns: [{ name: 'acme', pattern: 'x{0,3}' }] },
      'option "secrets.patterns[0]": secret pattern "acme": matches the empty string',
    )
    throwsNaming({ patterns: [null] }, /option "secrets.patterns\[0\]"/)
  })

  // A pattern's confidence is validated (it was not: `confidence ?? 'medium'` took anything): a
  // misspelt one would match neither the `high` nor the `medium` rule, leaving the pattern silently off
  // even with every rule at substitute — the typo the module promises to refuse.
  it('should refuse a pattern with an unknown confidence, naming the option', () => {
    for (const confidence of ['hgih', 'low', 'constructor']) {
      const pattern = {
        name: 'acme',
        pattern: 'ACME-[0-9]{8}',
        confidence,
      } as unknown as OperatorPattern
      throwsNaming(
        { high: 'substitute', medium: 'substitute', patterns: [pattern] },
        /option "secrets.patterns\[0\]"/,
      )
    }
  })

  it('should refuse a pattern whose kind exists already (built in, or an earlier pattern)', () => {
    throwsNaming(
      { patterns: [{ name: 'github-token', pattern: 'ghx_[A-Za-z0-9]{36}' }] },
      'option "secrets.patterns[0]": the kind "github-token" already exists',
    )
    throwsNaming(
      {
        patterns: [
          { name: 'acme', pattern: 'ACME-[0-9]{8}' },
          { name: 'acme', pattern: 'ACME-[A-Z]{8}' },
        ],
      },
      'option "secrets.patterns[1]": the kind "acme" already exists',
    )
  })

  it('should accept a kind entry for an operator pattern, and not change the options', () => {
    const options: SecretsOptions = {
      patterns: [{ name: 'acme-account', pattern: 'ACME-[0-9]{8}' }],
      kinds: { 'acme-account': 'substitute' },
    }
    const copy = structuredClone(options)
    const resolved = resolveSecrets(options)!
    expect(resolved.all.map((d) => d.kind)).toEqual([
      ...BUILT_IN.map((d) => d.kind),
      'acme-account',
    ])
    expect(resolved.forModel('m').substitute.map((d) => d.kind)).toEqual(['acme-account'])
    expect(options).toEqual(copy)
  })
})

describe('resolveSecrets: precedence', () => {
  it("should use the Worker's default: high-confidence kinds substitute, medium ones count", () => {
    const resolved = resolveSecrets(WORKER_SECRETS_DEFAULT)!
    const { substitute, detect } = resolved.forModel('@cf/any')
    expect(resolved.substitutes).toBe(true)
    expect(substitute.every((d) => d.confidence === 'high')).toBe(true)
    expect(detect.every((d) => d.confidence === 'medium')).toBe(true)
    expect(substitute.length + detect.length).toBe(BUILT_IN.length)
    expect(detect.map((d) => d.kind).sort()).toEqual([
      'aws-secret-access-key',
      'cloudflare-api-token',
      'se-personnummer',
      'us-ssn',
    ])
  })

  it('should apply: model kind, then guard kind, then model confidence, then guard confidence, then off', () => {
    const options: SecretsOptions = {
      high: 'substitute',
      medium: 'detect',
      kinds: { 'us-ssn': 'substitute', 'card-number': 'detect', iban: 'off' },
      models: {
        strict: { medium: 'substitute', kinds: { 'us-ssn': 'off', jwt: 'detect' } },
        loose: { high: 'off' },
      },
    }
    const guard = policies(options, 'other')
    expect(guard.get('us-ssn')).toBe('substitute') // guard kind over guard confidence
    expect(guard.get('card-number')).toBe('detect')
    expect(guard.get('iban')).toBe('off')
    expect(guard.get('github-token')).toBe('substitute')
    expect(guard.get('se-personnummer')).toBe('detect')
    const strict = policies(options, 'strict')
    expect(strict.get('us-ssn')).toBe('off') // model kind over guard kind
    expect(strict.get('jwt')).toBe('detect') // model kind over guard confidence
    expect(strict.get('se-personnummer')).toBe('substitute') // model confidence over guard's
    expect(strict.get('card-number')).toBe('detect') // guard kind over model confidence
    const loose = policies(options, 'loose')
    expect(loose.get('github-token')).toBe('off')
    expect(loose.get('card-number')).toBe('detect')
    expect(loose.get('us-ssn')).toBe('substitute')
    expect(policies({}, 'x').get('github-token')).toBe('off')
  })

  it('should hold the precedence for any rules (property)', () => {
    const policy = fc.constantFrom(...POLICIES)
    const rules: fc.Arbitrary<SecretRules> = fc.record(
      {
        high: policy,
        medium: policy,
        kinds: fc.dictionary(fc.constantFrom(...KINDS), policy, { maxKeys: 6 }),
      },
      { requiredKeys: [] },
    )
    fc.assert(
      fc.property(rules, fc.option(rules, { nil: undefined }), (guard, model) => {
        const options: SecretsOptions = { ...guard, models: model ? { m: model } : {} }
        const got = policies(options, 'm')
        for (const d of BUILT_IN) {
          const expected =
            (model?.kinds && Object.hasOwn(model.kinds, d.kind)
              ? model.kinds[d.kind]
              : undefined) ??
            (guard.kinds && Object.hasOwn(guard.kinds, d.kind) ? guard.kinds[d.kind] : undefined) ??
            model?.[d.confidence] ??
            guard[d.confidence] ??
            'off'
          expect(got.get(d.kind), d.kind).toBe(expected)
        }
        const resolved = resolveSecrets(options)!
        const any = [guard, ...(model ? [model] : [])].some(
          (r) =>
            r.high === 'substitute' ||
            r.medium === 'substitute' ||
            Object.values(r.kinds ?? {}).includes('substitute'),
        )
        expect(resolved.substitutes).toBe(any)
      }),
      { numRuns: 300, seed: 20 },
    )
  })

  it('should give each model its own split, the same object on every call', () => {
    const resolved = resolveSecrets({ high: 'detect', models: { a: { high: 'substitute' } } })!
    expect(resolved.forModel('a')).toBe(resolved.forModel('a'))
    expect(resolved.forModel('a').substitute.length).toBeGreaterThan(0)
    expect(resolved.forModel('b').substitute).toEqual([])
    expect(resolved.forModel('b').detect.length).toBe(resolved.forModel('a').substitute.length)
  })

  it('should say nothing substitutes when every rule is off or detect', () => {
    const resolved = resolveSecrets({
      high: 'detect',
      medium: 'off',
      models: { m: { high: 'off' } },
    })!
    expect(resolved.substitutes).toBe(false)
    expect(resolved.forModel('m')).toEqual({ substitute: [], detect: [] })
  })
})

describe('resolveSecrets: names like Object.prototype members', () => {
  const constructorPattern: OperatorPattern = {
    name: 'constructor',
    pattern: 'CTOR-[0-9]{8}',
    confidence: 'high',
  }

  it('should read a pattern named "constructor" by its confidence, not as Object.prototype.constructor', () => {
    const options: SecretsOptions = { high: 'substitute', patterns: [constructorPattern] }
    expect(policies(options, 'm').get('constructor')).toBe('substitute')
    expect(policies({ ...options, kinds: {} }, 'm').get('constructor')).toBe('substitute')
    expect(
      policies({ ...options, models: { m: { high: 'detect', kinds: {} } } }, 'm').get(
        'constructor',
      ),
    ).toBe('detect')
    expect(policies({ patterns: [constructorPattern] }, 'm').get('constructor')).toBe('off')
  })

  it('should take a kind entry for "constructor" when the pattern exists, at guard and model level', () => {
    const options: SecretsOptions = {
      high: 'substitute',
      patterns: [constructorPattern],
      // Built from entries: TypeScript types a literal's `constructor` key as Object's member.
      kinds: kindEntry('constructor', 'detect'),
      models: { m: { kinds: kindEntry('constructor', 'off') } },
    }
    expect(policies(options, 'other').get('constructor')).toBe('detect')
    expect(policies(options, 'm').get('constructor')).toBe('off')
  })

  it('should refuse kind entries named after Object.prototype members when no such kind exists', () => {
    throwsNaming({ kinds: { constructor: 'off' } }, 'unknown kind "constructor"')
    throwsNaming({ kinds: { toString: 'off' } }, 'unknown kind "toString"')
    throwsNaming({ kinds: JSON.parse('{"__proto__":"substitute"}') }, 'unknown kind "__proto__"')
    throwsNaming(
      { models: { m: { kinds: JSON.parse('{"__proto__":"off"}') } } },
      'option "secrets.models["m"].kinds": unknown kind "__proto__"',
    )
  })

  it('should treat model names like Object.prototype members as plain names', () => {
    const resolved = resolveSecrets({ high: 'substitute' })!
    const plain = resolved.forModel('@cf/plain')
    for (const model of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      expect(resolved.forModel(model), model).toEqual(plain)
    }
    const models = JSON.parse('{"__proto__":{"high":"detect"},"constructor":{"high":"off"}}')
    const named = resolveSecrets({ high: 'substitute', models })!
    expect(named.forModel('__proto__').substitute).toEqual([])
    expect(named.forModel('__proto__').detect.length).toBe(plain.substitute.length)
    expect(named.forModel('constructor')).toEqual({ substitute: [], detect: [] })
    expect(named.forModel('toString')).toEqual(plain)
    // No model's rules leaked onto Object.prototype.
    expect(Object.hasOwn(Object.prototype, 'high')).toBe(false)
  })
})
