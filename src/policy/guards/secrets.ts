// The secrets guard: credentials in well-known formats (src/policy/secrets.ts, the list the
// decision log's redaction uses too), without the loose `NAME=value` finds that only logs hide
// (a weak one: `max_tokens=4096`, `password=***`). A finding's type is the credential's format.
import {
  CREDENTIAL_RANK,
  findCredentials,
  isAssignmentName,
  isAwsSecretName,
  isPlaceholder,
  type CredentialKind,
} from '../secrets.js';
import { foldAware, type Span, type TextDetector } from './detector.js';

/** Most specific first: the order a text holding several reports by. */
const TYPES = CREDENTIAL_RANK;

const TEXTS: Readonly<Record<CredentialKind, string>> = {
  private_key: 'a private key',
  jwt: 'a JSON Web Token',
  aws_access_key: 'an AWS access key id',
  github_token: 'a GitHub token',
  slack_token: 'a Slack token',
  stripe_key: 'a Stripe key',
  google_api_key: 'a Google API key',
  anthropic_key: 'an Anthropic API key',
  openai_key: 'an OpenAI API key',
  bearer: 'a bearer token',
  url_password: 'a password in a URL',
  aws_secret_key: 'an AWS secret access key',
  named_secret: 'a secret assigned to a secret-like name',
};

function strong(text: string) {
  return findCredentials(text).filter((c) => c.weak !== true);
}

function rank(s: string): number {
  let best = -1;
  for (const c of strong(s)) {
    const i = TYPES.indexOf(c.kind);
    if (best === -1 || i < best) best = i;
  }
  return best;
}

export type SecretType = CredentialKind;

export const secrets: TextDetector<SecretType> = {
  first: foldAware(TYPES, rank),
  spans: (s) => strong(s).map((c): Span<SecretType> => ({ type: c.kind, start: c.start, end: c.end })),
  // A JSON number holds no credential: every format has letters or punctuation.
  numberDigits: [],
  text: (type) => TEXTS[type],
  // `{"password": "hunter2"}`: a JSON member is a NAME and its value, as `password=hunter2` is.
  member: (key, value) =>
    isAssignmentName(key) && !isPlaceholder(value) ? (isAwsSecretName(key) ? 'aws_secret_key' : 'named_secret') : null,
};
