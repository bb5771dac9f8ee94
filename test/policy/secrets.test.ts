// The credential detectors (src/policy/secrets.ts): what each finds inside a string, what stays as
// it was around it, what is not a credential, and inputs built to make a backtracking pattern take
// quadratic time, which complete.
import { describe, expect, it } from 'vitest';
import { findCredentials, isSecretName, redactCredentials } from '../../src/policy/secrets.js';

const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZ2VudC03Iiwicm9sZXMiOlsiYWRtaW4iXX0.3q0yTt3Xb0m7pN6x9z2QeHqPmFk1QWJ2YqkJ8uW8bXc';
const PEM = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun',
  'VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK',
  '-----END RSA PRIVATE KEY-----',
].join('\n');

describe('redactCredentials: each kind, the rest of the string kept', () => {
  const cases: [string, string, string][] = [
    [
      'a bearer token',
      'curl -H "Authorization: Bearer 0f3c9a7b2d4e6f8a1b3c5d7e" https://api',
      'curl -H "Authorization: Bearer [redacted:bearer]" https://api',
    ],
    ['a bearer token alone', 'Bearer sk-proj-AbC123xyz789', 'Bearer [redacted:bearer]'],
    ['a lower-case scheme', 'bearer 0f3c9a7b2d4e6f8a', 'bearer [redacted:bearer]'],
    ['a scheme in any case', 'BeArEr 0f3c9a7b2d4e6f8a', 'BeArEr [redacted:bearer]'],
    ['a JWT', `token was ${JWT}, expired`, 'token was [redacted:jwt], expired'],
    ['a JWT after Bearer', `Authorization: Bearer ${JWT}`, 'Authorization: Bearer [redacted:jwt]'],
    ['an unsigned JWT (alg none)', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.', '[redacted:jwt]'],
    ['a PEM private key', `key:\n${PEM}\nthanks`, 'key:\n[redacted:private_key]\nthanks'],
    ['a PEM key cut short', `-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA`, '[redacted:private_key]'],
    [
      'a PGP private key block',
      '-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----',
      '[redacted:private_key]',
    ],
    [
      'AWS_SECRET_ACCESS_KEY=… in a command',
      'export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY && aws s3 ls',
      'export AWS_SECRET_ACCESS_KEY=[redacted:aws_secret_key] && aws s3 ls',
    ],
    ['an AWS access key id', 'id AKIAIOSFODNN7EXAMPLE used', 'id [redacted:aws_access_key] used'],
    ['temporary AWS credentials', 'ASIAY34FZKBOKMUTVV7A', '[redacted:aws_access_key]'],
    [
      'a GitHub token',
      'git clone https://ghp_1234567890abcdefghijABCDEFGHIJ123456@github.com/o/r',
      'git clone https://[redacted:github_token]@github.com/o/r',
    ],
    [
      'a fine-grained GitHub token',
      'GH=github_pat_11ABCDEFG0123456789_ZYXWVUTSRQPONMLKJIzyxw',
      'GH=[redacted:github_token]',
    ],
    [
      'a Slack token',
      'slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx ok',
      'slack [redacted:slack_token] ok',
    ],
    [
      'a Stripe key',
      'stripe.api_key = "sk_live_51H8abcdefghijklmnopqrstu"',
      'stripe.api_key = "[redacted:stripe_key]"',
    ],
    ['a Stripe restricted key', 'rk_live_51H8abcdefghijkl', '[redacted:stripe_key]'],
    [
      'a Google API key',
      'maps?key=AIzaSyD-1234567890abcdefghijklmnopqrstu&x=1',
      'maps?key=[redacted:google_api_key]&x=1',
    ],
    [
      'a URL password',
      'DATABASE_URL=postgres://gatehouse:s3cr3t-pw@db:5432/g',
      'DATABASE_URL=postgres://gatehouse:[redacted:url_password]@db:5432/g',
    ],
    ['NAME: value', 'password: hunter2\nuser: bob', 'password: [redacted:named_secret]\nuser: bob'],
    ['--name=value', 'psql --password=hunter2 -h db', 'psql --password=[redacted:named_secret] -h db'],
    [
      'JSON text in a string',
      '{"user": "bob", "client_secret": "abc def", "n": 1}',
      '{"user": "bob", "client_secret": "[redacted:named_secret]", "n": 1}',
    ],
    [
      'a query string',
      'https://x/cb?code=1&access_token=abc123&state=z',
      'https://x/cb?code=1&access_token=[redacted:named_secret]&state=z',
    ],
    [
      'Authorization: Basic',
      'Authorization: Basic dXNlcjpwYXNzd29yZA==',
      'Authorization: Basic [redacted:named_secret]',
    ],
    [
      'a secret NAME inside a value that is not one',
      'env: "DB_PASSWORD=hunter2"',
      'env: "DB_PASSWORD=[redacted:named_secret]"',
    ],
    ['two in one string', `a=${JWT} b=AKIAIOSFODNN7EXAMPLE`, 'a=[redacted:jwt] b=[redacted:aws_access_key]'],
  ];
  it.each(cases)('%s', (_name, text, redacted) => {
    expect(redactCredentials(text)).toBe(redacted);
  });

  it('reports each credential with its place: the secret itself, never its name or scheme', () => {
    const text = 'Authorization: Bearer 0f3c9a7b2d4e6f8a';
    const [found] = findCredentials(text);
    expect(found).toEqual({ kind: 'bearer', start: 22, end: text.length });
    expect(text.slice(found!.start, found!.end)).toBe('0f3c9a7b2d4e6f8a');
  });
});

describe('what is not found', () => {
  it.each([
    ['prose about bearer tokens', 'send a bearer token with each call'],
    ['a port in a URL', 'https://example.com:8080/path'],
    ['an innocent NAME', 'user=bob limit: 10'],
    ['a short prefix', 'AKIA1234 and ghp_short and sk_live_x'],
    ['a bare password', 'the password is hunter2'],
    ['an AWS secret key without its name', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
    ['a public key', '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----'],
    ['dotted words', 'eyJ.not.a.token and a.b.c'],
  ])('%s', (_name, text) => {
    expect(findCredentials(text)).toEqual([]);
    expect(redactCredentials(text)).toBe(text);
  });
});

describe('isSecretName', () => {
  it('the condition language’s words and the HTTP ones, any case, `-` and `_` ignored', () => {
    for (const name of [
      'password',
      'AWS_SECRET_ACCESS_KEY',
      'api-key',
      'X-Api-Key',
      'access_token',
      'Authorization',
      'Cookie',
      'passwd',
      'PASSPHRASE',
      'credentials',
    ]) {
      expect(isSecretName(name), name).toBe(true);
    }
    for (const name of ['user', 'name', 'AWS_ACCESS_KEY_ID', 'order', 'amount', 'value'])
      expect(isSecretName(name), name).toBe(false);
  });
});

describe('linear time: inputs that make backtracking patterns quadratic complete', () => {
  // 200,000 characters each: a quadratic pass over one would take hours, far past the test's timeout.
  const N = 200_000;
  const rep = (unit: string): string => unit.repeat(Math.ceil(N / unit.length));
  const adversarial: [string, string][] = [
    ['JWT headers without dots', rep('eyJ')],
    ['JWT segments without a signature', rep('eyJabcd.')],
    ['PEM BEGIN without END', rep('-----BEGIN PRIVATE KEY-----\n')],
    ['PEM END without BEGIN', rep('-----END PRIVATE KEY-----')],
    ['half PEM markers', rep('-----BEGIN ')],
    ['Bearer without a token', rep('Bearer ')],
    ['a NAME and spaces, no separator', `a${' '.repeat(N)}x`],
    ['a NAME longer than a NAME', `${'a'.repeat(N)}=x`],
    ['separators', rep('a=')],
    ['colons', rep('a:')],
    ['JSON keys', rep('"a":')],
    ['dotted names', rep('a.')],
    ['a URL user without a password end', `x://${rep('a:')}`],
    ['URL schemes', rep('a://a:')],
    ['provider prefixes', rep('ghp_') + rep('AKIA') + rep('xoxb') + rep('sk_live') + rep('AIza')],
    ['AI provider prefixes', rep('sk-') + rep('sk-ant-') + rep('xoxe.xoxp-')],
    ['a quoted secret never closed', `password="${'x'.repeat(N)}`],
    ['schemes after secret names', rep('token: bearer ')],
  ];
  it.each(adversarial)('%s', (_name, text) => {
    const out = redactCredentials(text);
    expect(typeof out).toBe('string');
    expect(findCredentials(text).every((c) => c.start < c.end && c.end <= text.length)).toBe(true);
  });
});
