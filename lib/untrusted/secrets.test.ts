import { describe, expect, it } from "vitest";
import type { JsonValue } from "./safe-json";
import { SECRET_KINDS, findSecrets, redactSecrets, redactSecretsInJson, type SecretKind } from "./secrets";

// Fixtures are assembled at run time so no scanner mistakes this file for a leak.
const BASE62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
function fake(length: number, seed = 7, alphabet = BASE62): string {
  let out = "";
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 48271) % 2147483647;
    out += alphabet[x % alphabet.length];
  }
  return out;
}
const b64url = (s: string) => btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

const AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE";
const GITHUB_PAT = "gh" + "p_" + fake(36, 1);
const GITHUB_FINE = "github" + "_pat_" + fake(22, 2) + "_" + fake(59, 3);
const SLACK_BOT = "xo" + "xb-" + "1234567890-" + "1234567890123-" + fake(24, 4);
const SLACK_HOOK = "https://hooks.slack.com/services/" + "T0" + fake(8, 5).toUpperCase() + "/B0" + fake(8, 6).toUpperCase() + "/" + fake(24, 7);
const STRIPE_LIVE = "sk" + "_live_" + fake(24, 8);
const STRIPE_RESTRICTED = "rk" + "_test_" + fake(24, 9);
const STRIPE_WEBHOOK = "wh" + "sec_" + fake(32, 10);
const ANTHROPIC = "sk-" + "ant-api03-" + fake(93, 11) + "AA";
const OPENAI_PROJECT = "sk-" + "proj-" + fake(40, 12) + "T3BlbkFJ" + fake(40, 13);
const OPENAI_LEGACY = "sk-" + fake(48, 14);
const GOOGLE = "AI" + "za" + "Sy" + fake(33, 15);
const AIRLOCK = "alk" + "_" + fake(43, 16, BASE62 + "-_");
const JWT = [b64url('{"alg":"HS256","typ":"JWT"}'), b64url('{"sub":"1234567890","name":"Jo","iat":1516239022}'), fake(43, 17, BASE62 + "-_")].join(".");
const PEM_BODY = Array.from({ length: 6 }, (_, i) => fake(64, 20 + i, BASE62 + "+/")).join("\n");
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}\n-----END RSA PRIVATE KEY-----`;
const OPENSSH = `-----BEGIN OPENSSH PRIVATE KEY-----\n${PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----`;
const GENERIC_VALUE = fake(32, 30);

function kinds(text: string): SecretKind[] {
  return findSecrets(text).map((s) => s.kind);
}

/** The redacted text never contains the secret, nor its tail (no half-redaction). */
function expectGone(text: string, secret: string, kind: SecretKind) {
  const r = redactSecrets(text);
  expect(r.kinds).toContain(kind);
  expect(r.text).not.toContain(secret);
  expect(r.text).not.toContain(secret.slice(-12));
  expect(r.text).toContain(`[REDACTED:${kind}]`);
}

describe("secret kinds", () => {
  it.each<[SecretKind, string]>([
    ["aws_access_key", AWS_ID],
    ["github_token", GITHUB_PAT],
    ["github_token", GITHUB_FINE],
    ["slack_token", SLACK_BOT],
    ["slack_token", SLACK_HOOK],
    ["stripe_key", STRIPE_LIVE],
    ["stripe_key", STRIPE_RESTRICTED],
    ["stripe_key", STRIPE_WEBHOOK],
    ["anthropic_key", ANTHROPIC],
    ["openai_key", OPENAI_PROJECT],
    ["openai_key", OPENAI_LEGACY],
    ["google_api_key", GOOGLE],
    ["airlock_token", AIRLOCK],
    ["jwt", JWT],
    ["private_key", PEM],
    ["private_key", OPENSSH],
  ])("finds a %s alone, inside prose, at both ends, in JSON text and between unicode", (kind, secret) => {
    expect(findSecrets(secret)).toEqual([{ kind, start: 0, end: secret.length }]);
    expectGone(`the value was ${secret} and nothing else`, secret, kind);
    expectGone(`${secret} starts the line`, secret, kind);
    expectGone(`line ends with ${secret}`, secret, kind);
    expectGone(JSON.stringify({ note: `copy: ${secret}` }), secret, kind);
    expectGone(`🔑${secret}✓`, secret, kind);
    expectGone(`密钥：${secret}。`, secret, kind);
    expectGone(`‏שלום ${secret} עולם`, secret, kind);
    expectGone(`"${secret}"`, secret, kind);
    expectGone(`(${secret})`, secret, kind);
    expectGone(`a\n${secret}\nb`, secret, kind);
  });

  it("finds tokens in URLs, query strings and headers", () => {
    expectGone(`https://api.example.com/v1?key=${GOOGLE}&q=1`, GOOGLE, "google_api_key");
    expectGone(`https://example.com/cb#access_token=${JWT}`, JWT, "jwt");
    expectGone(`https://x-access-token:${GITHUB_PAT}@github.com/org/repo.git`, GITHUB_PAT, "github_token");
    expectGone(`curl -H "Authorization: Bearer ${AIRLOCK}" https://airlock.example`, AIRLOCK, "airlock_token");
    expectGone(`Authorization: token ${GITHUB_PAT}`, GITHUB_PAT, "github_token");
  });

  it("finds connection strings with a password, whole", () => {
    for (const url of [
      "postgres://app:S3cretPass@db.internal:5432/airlock?sslmode=require",
      "postgresql://app:p%40ss%3Aword@10.0.0.5/airlock",
      "mysql://root:hunter22@127.0.0.1:3306/shop",
      "mongodb+srv://admin:Zx9kLmN2pQ@cluster0.abcde.mongodb.net/test?retryWrites=true",
      "redis://:authpass123@cache:6379/0",
      "amqps://guest:gu3st-pw@rabbit.example.com/vhost",
      "https://deploy:tok3nValue@git.example.com/repo.git",
    ]) {
      const r = redactSecrets(`DATABASE_URL=${url} (primary)`);
      expect(r.kinds, url).toEqual(["connection_string"]);
      expect(r.text).toBe("DATABASE_URL=[REDACTED:connection_string] (primary)");
    }
    expect(redactSecrets("jdbc:postgresql://u:pw12345678@h/db").text).toBe("jdbc:[REDACTED:connection_string]");
  });

  it("finds bearer and basic credentials, leaving the scheme readable", () => {
    const opaque = fake(40, 40);
    expect(redactSecrets(`Authorization: Bearer ${opaque}`).text).toBe("Authorization: Bearer [REDACTED:bearer_token]");
    expect(redactSecrets(`authorization: bearer ${opaque}\r\n`).text).toBe("authorization: bearer [REDACTED:bearer_token]\r\n");
    expect(redactSecrets(`Bearer ${JWT}`).text).toBe("Bearer [REDACTED:jwt]");
    const basic = btoa("deploy:s3cret-pass");
    expect(redactSecrets(`Authorization: Basic ${basic}`).text).toBe("Authorization: Basic [REDACTED:bearer_token]");
    expect(redactSecrets(`{"headers":{"Authorization":"Basic ${basic}"}}`).text).toBe('{"headers":{"Authorization":"Basic [REDACTED:bearer_token]"}}');
  });

  it("finds PEM blocks in every dress: escaped in JSON, indented in YAML, encrypted, truncated", () => {
    const escaped = JSON.stringify({ key: PEM });
    expect(redactSecrets(escaped).text).toBe('{"key":"[REDACTED:private_key]"}');
    const yaml = `tls:\n  key: |\n    ${PEM.split("\n").join("\n    ")}\n  cert: none`;
    expect(redactSecrets(yaml).text).toBe("tls:\n  key: |\n    [REDACTED:private_key]\n  cert: none");
    const legacy = `-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF\n\n${PEM_BODY}\n-----END RSA PRIVATE KEY-----`;
    expect(redactSecrets(`x ${legacy} y`).text).toBe("x [REDACTED:private_key] y");
    const truncated = `-----BEGIN PRIVATE KEY-----\n${PEM_BODY.slice(0, 150)}`;
    const r = redactSecrets(`log: ${truncated}`);
    expect(r.text).toBe("log: [REDACTED:private_key]");
    const pgp = `-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n${PEM_BODY}\n-----END PGP PRIVATE KEY BLOCK-----`;
    expect(redactSecrets(pgp).text).toBe("[REDACTED:private_key]");
  });

  it("finds key=, secret=, token=, password= assignments with a generated value", () => {
    for (const text of [
      `api_key=${GENERIC_VALUE}`,
      `API_KEY: "${GENERIC_VALUE}"`,
      `export CLIENT_SECRET='${GENERIC_VALUE}'`,
      `{"access_token":"${GENERIC_VALUE}"}`,
      `{\\"apiKey\\":\\"${GENERIC_VALUE}\\"}`,
      `x-api-key: ${GENERIC_VALUE}`,
      `?token=${GENERIC_VALUE}&page=2`,
      `key => ${GENERIC_VALUE}`,
      `aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`,
      `password=Tr0ub4dor&3`,
      `{"password": "Tr0ub4dor&3"}`,
      `DB_PASSWORD=correct-Horse-9`,
      `api_key=9f86d081884c7d659a2feaa0c55ad015`,
    ]) {
      const r = redactSecrets(text);
      expect(r.kinds, text).toEqual(["generic_api_key"]);
      expect(r.text).not.toContain(GENERIC_VALUE);
      expect(r.text).not.toMatch(/Tr0ub4dor|EXAMPLEKEY|Horse-9/);
    }
  });

  it("keeps the set of kinds closed", () => {
    expect(new Set(SECRET_KINDS).size).toBe(13);
    const all = [AWS_ID, GITHUB_PAT, SLACK_BOT, STRIPE_LIVE, ANTHROPIC, OPENAI_LEGACY, GOOGLE, AIRLOCK, JWT, PEM];
    for (const k of kinds(all.join(" | "))) expect(SECRET_KINDS).toContain(k);
  });
});

describe("spans", () => {
  it("are in order, non-overlapping and merged when detectors overlap", () => {
    const text = `a ${AWS_ID} b token=${GITHUB_PAT} c Bearer ${JWT} d postgres://u:${GENERIC_VALUE}@h/db?password=${GENERIC_VALUE} e`;
    const spans = findSecrets(text);
    expect(spans.map((s) => s.kind)).toEqual(["aws_access_key", "github_token", "jwt", "connection_string"]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end);
    expect(text.slice(spans[1]!.start, spans[1]!.end)).toBe(GITHUB_PAT);
    expect(redactSecrets(text).text).toBe(
      "a [REDACTED:aws_access_key] b token=[REDACTED:github_token] c Bearer [REDACTED:jwt] d [REDACTED:connection_string] e",
    );
  });

  it("redacts adjacent secrets separately and is stable when run twice", () => {
    const text = `${AWS_ID} ${GOOGLE}\n${AIRLOCK}`;
    const once = redactSecrets(text);
    expect(once.kinds).toEqual(["aws_access_key", "google_api_key", "airlock_token"]);
    expect(redactSecrets(once.text)).toEqual({ text: once.text, kinds: [] });
  });

  it("redacts a token glued to the text after it, not only whole words", () => {
    expect(redactSecrets(`${GITHUB_PAT}Thanks`).text).toBe("[REDACTED:github_token]");
    expect(redactSecrets(`prefix_${GITHUB_PAT}`).text).toBe("prefix_[REDACTED:github_token]");
    expect(redactSecrets(`x${AIRLOCK.slice(0, 47)}`).kinds).toEqual([]); // a longer word is not our token
  });
});

describe("benign look-alikes", () => {
  const BENIGN = [
    "inv_0001",
    "cus_000123 ordered sku_9f8e7d",
    "550e8400-e29b-41d4-a716-446655440000",
    "id=550e8400-e29b-41d4-a716-446655440000",
    "idempotency_key=550e8400-e29b-41d4-a716-446655440000",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "checksum=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "key=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "commit da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "aGVsbG8gd29ybGQ=",
    "payload: eyJhbGciOiJub25lIn0",
    "The password must be at least 12 characters.",
    "password: required",
    "password=********",
    "password=<your-password>",
    "api_key=${API_KEY}",
    "token: {{ secrets.TOKEN }}",
    "Bearer tokens expire after one hour",
    "Authorization: required",
    "token count 1234",
    "tokens=4096",
    "max_tokens: 1024",
    "monkey=bananas1234567890abcdef",
    "nextPageToken=CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA0ZmdsaWQSAhgB",
    "tokenHash=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "publicKey=MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE",
    "pk_live_" + fake(24, 50),
    "sk-learn-tutorial-for-beginners-2024-part-one",
    "ASIAPACIFICREGIONALSALES",
    "AKIA is a prefix, AKIA1234 is too short",
    "alk_AbCdEf12 (token prefix shown in the console)",
    "ghp_ is GitHub's prefix",
    "https://example.com:8080/path?x=1",
    "postgres://localhost:5432/airlock",
    "postgres://app@db:5432/airlock",
    "postgres://app:${DB_PASSWORD}@db/airlock",
    "postgres://app:****@db/airlock",
    "mailto:alice@example.com",
    "alice@example.com",
    "2026-11-30T12:34:56.789Z",
    "v1.2.3-beta.4+build.5",
    "Total: 1,234.56 EUR; key: value",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----",
    "skills: sk-1, sk-2",
    "The secret to good soup is patience.",
    "credential: see vault",
    "x-api-key: <redacted>",
  ];

  it.each(BENIGN)("leaves %j untouched", (text) => {
    expect(findSecrets(text)).toEqual([]);
    expect(redactSecrets(text)).toEqual({ text, kinds: [] });
  });

  it("leaves a JSON result of ordinary data untouched", () => {
    const value: JsonValue = {
      customers: [
        { id: "cus_0001", email: "a@example.com", note: "Invoice inv_0001 paid", digest: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
      ],
      key: "inv_0001",
      token_count: 1234,
      nextPageToken: "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA0ZmdsaWQSAhgB",
      password_policy: "min 12 characters",
      requestId: "550e8400-e29b-41d4-a716-446655440000",
    };
    const r = redactSecretsInJson(value);
    expect(r.redactions).toEqual([]);
    expect(JSON.parse(JSON.stringify(r.value))).toEqual(value);
  });
});

describe("redactSecretsInJson", () => {
  it("walks values, arrays and keys, with paths built from the redacted keys", () => {
    const input: JsonValue = {
      customers: [{ id: "cus_1" }, { id: "cus_2" }, { id: "cus_3" }, { id: "cus_4", note: `rotated ${AWS_ID} yesterday` }],
      [GITHUB_PAT]: "a token as a key",
      "e-mail notes": [`postgres://u:${GENERIC_VALUE}@h/db`],
      nested: { deeper: [[{ jwt: JWT }]] },
    };
    const r = redactSecretsInJson(input);
    expect(r.redactions).toEqual([
      { kind: "aws_access_key", path: "customers[3].note" },
      { kind: "github_token", path: '["[REDACTED:github_token]"]' },
      { kind: "connection_string", path: '["e-mail notes"][0]' },
      { kind: "jwt", path: "nested.deeper[0][0].jwt" },
    ]);
    expect(JSON.parse(JSON.stringify(r.value))).toEqual({
      customers: [{ id: "cus_1" }, { id: "cus_2" }, { id: "cus_3" }, { id: "cus_4", note: "rotated [REDACTED:aws_access_key] yesterday" }],
      "[REDACTED:github_token]": "a token as a key",
      "e-mail notes": ["[REDACTED:connection_string]"],
      nested: { deeper: [[{ jwt: "[REDACTED:jwt]" }]] },
    });
    expect(JSON.stringify(r)).not.toContain(GITHUB_PAT);
  });

  it("redacts a secret split across a key and its value (the name says what the value is)", () => {
    const r = redactSecretsInJson({
      password: "Tr0ub4dor&3",
      apiKey: GENERIC_VALUE,
      client_secret: GENERIC_VALUE,
      headers: { authorization: `Basic ${btoa("u:p")}`, "X-Api-Key": GENERIC_VALUE },
      credentials: { aws_secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" },
      apiKeys: [GENERIC_VALUE, fake(32, 31)],
      username: "alice",
      api_key: "9f86d081884c7d659a2feaa0c55ad015",
      digest: { key: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
      key: "inv_0001",
      token: "short",
    });
    expect(r.redactions).toEqual([
      { kind: "generic_api_key", path: "password" },
      { kind: "generic_api_key", path: "apiKey" },
      { kind: "generic_api_key", path: "client_secret" },
      { kind: "bearer_token", path: "headers.authorization" },
      { kind: "generic_api_key", path: 'headers["X-Api-Key"]' },
      { kind: "generic_api_key", path: "credentials.aws_secret_access_key" },
      { kind: "generic_api_key", path: "apiKeys[0]" },
      { kind: "generic_api_key", path: "apiKeys[1]" },
      { kind: "generic_api_key", path: "api_key" },
    ]);
    const out = JSON.parse(JSON.stringify(r.value)) as Record<string, unknown>;
    expect(out.username).toBe("alice");
    expect(out.key).toBe("inv_0001");
    expect(out.digest).toEqual({ key: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" });
    expect(out.token).toBe("short");
    expect(JSON.stringify(out)).not.toMatch(/Tr0ub4dor|EXAMPLEKEY/);
    expect(JSON.stringify(out)).not.toContain(GENERIC_VALUE);
  });

  it("never mutates its input and returns null-prototype objects", () => {
    const input = { list: [{ note: AWS_ID }], ["__proto__"]: { polluted: AWS_ID } } as unknown as JsonValue;
    const before = JSON.stringify(input);
    const frozen = JSON.parse(before, (_k, v: unknown) => (typeof v === "object" && v !== null ? Object.freeze(v) : v)) as JsonValue;
    const r = redactSecretsInJson(frozen);
    expect(JSON.stringify(frozen)).toBe(before);
    expect(JSON.stringify(input)).toBe(before);
    const out = r.value as { [key: string]: JsonValue };
    expect(Object.getPrototypeOf(out)).toBeNull();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(r.redactions.map((x) => x.path)).toEqual(["list[0].note", "__proto__.polluted"]);
  });

  it("keeps two keys apart when they redact to the same text", () => {
    const r = redactSecretsInJson({ [AWS_ID]: 1, ["AKIA" + "ABCDEFGHIJ234567"]: 2 });
    expect(Object.keys(r.value as object)).toEqual(["[REDACTED:aws_access_key]", "[REDACTED:aws_access_key]#2"]);
    expect(r.redactions.map((x) => x.path)).toEqual(['["[REDACTED:aws_access_key]"]', '["[REDACTED:aws_access_key]#2"]']);
  });

  it("handles scalars and a top-level string", () => {
    expect(redactSecretsInJson(null)).toEqual({ value: null, redactions: [] });
    expect(redactSecretsInJson(42)).toEqual({ value: 42, redactions: [] });
    expect(redactSecretsInJson(`x ${AWS_ID}`)).toEqual({ value: "x [REDACTED:aws_access_key]", redactions: [{ kind: "aws_access_key", path: "" }] });
  });
});

describe("secrets glued to the text around them", () => {
  it.each<[string, string, SecretKind]>([
    ["a letter before a Stripe key", `x${STRIPE_LIVE}`, "stripe_key"],
    ["an id before a Stripe key", `ref_052${STRIPE_LIVE}`, "stripe_key"],
    ["a word before a webhook secret", `refund${STRIPE_WEBHOOK} done`, "stripe_key"],
    ["a digit before a GitHub token", `7${GITHUB_PAT}`, "github_token"],
    ["a lowercase letter before an AWS key id", `x${AWS_ID}`, "aws_access_key"],
    ["a digit outside base32 before an AWS key id", `ref9${AWS_ID}`, "aws_access_key"],
  ])("finds %s", (_name, text, kind) => {
    const secret = kind === "aws_access_key" ? AWS_ID : text.slice(text.search(/sk_|rk_|whsec_|gh[pousr]_/));
    expectGone(text, secret.replace(/ done$/, ""), kind);
  });

  it("finds a key spelled in full-width forms, and returns the text folded with it redacted", () => {
    const wide = [...STRIPE_LIVE].map((ch) => String.fromCodePoint(ch.codePointAt(0)! + 0xfee0)).join("");
    const r = redactSecrets(`reason: ${wide} ｏｋ`);
    expect(r).toEqual({ text: "reason: [REDACTED:stripe_key] ok", kinds: ["stripe_key"] });
    // Full-width text without a credential is left as written.
    expect(redactSecrets("ｏｋ ＡＢＣ")).toEqual({ text: "ｏｋ ＡＢＣ", kinds: [] });
  });

  it("finds a key split by zero-width joiners (invisible, so it reads as the key), and leaves joiners in text without one", () => {
    const split = `${STRIPE_LIVE.slice(0, 12)}\u200d${STRIPE_LIVE.slice(12)}`;
    expect(redactSecrets(`reason: ${split}`)).toEqual({ text: "reason: [REDACTED:stripe_key]", kinds: ["stripe_key"] });
    const family = "\u{1F468}\u200d\u{1F469}\u200d\u{1F467}";
    expect(redactSecrets(`a family ${family}`)).toEqual({ text: `a family ${family}`, kinds: [] });
  });

  it("leaves an uppercase word that merely contains a prefix, and identifiers glued to a prefix whose tail holds no digit", () => {
    for (const text of [
      "THEASIAPACIFICREGIONALSALESTEAM",
      "task_test_checkoutFlowRegression",
      "risk_live_dashboardOverviewPanel",
      `weighs_${"a".repeat(40)}`,
    ]) {
      expect(findSecrets(text), text).toEqual([]);
    }
  });

  it("never undoes a redaction by folding: a key as written and one in full-width forms are both redacted", () => {
    const wide = [...STRIPE_LIVE].map((ch) => String.fromCodePoint(ch.codePointAt(0)! + 0xfee0)).join("");
    const r = redactSecrets(`\uff21${AWS_ID} ${wide}`);
    expect(r.text).not.toContain(AWS_ID);
    expect(r.text).not.toContain(STRIPE_LIVE);
    expect(r.kinds.sort()).toEqual(["aws_access_key", "stripe_key"]);
  });
});

describe("bounded work", () => {
  const MB = 1_000_000;
  const ADVERSARIAL: [string, string][] = [
    ["letters", "a".repeat(MB)],
    ["base64", fake(MB, 99, BASE62 + "+/")],
    ["jwt headers", "eyJ".repeat(MB / 3)],
    ["dotted jwt segments", "eyJabcdefgh.".repeat(MB / 12)],
    ["github prefixes", "ghp_".repeat(MB / 4)],
    ["fine-grained prefixes", "github_pat_".repeat(MB / 11)],
    ["slack prefixes", "xoxb-".repeat(MB / 5)],
    ["openai prefixes", "sk-".repeat(MB / 3)],
    ["airlock prefixes", "alk_".repeat(MB / 4)],
    ["aws prefixes", "AKIA".repeat(MB / 4)],
    ["aws prefixes after lowercase", "xAKIA".repeat(MB / 5)],
    ["stripe prefixes", "sk_live_".repeat(MB / 8)],
    ["stripe prefixes in a word", "ask_test_x".repeat(MB / 10)],
    ["pem headers", "-----BEGIN PRIVATE KEY-----".repeat(MB / 27)],
    ["pem header then body", "-----BEGIN PRIVATE KEY-----\n" + "A".repeat(MB)],
    ["assignments", "password=".repeat(MB / 9)],
    ["names without values", "api_key_".repeat(MB / 8)],
    ["schemes", "postgres://".repeat(MB / 11)],
    ["userinfo", "a:b@".repeat(MB / 4)],
    ["url without @", "https://u:" + "p".repeat(MB)],
    ["bearer words", "Bearer ".repeat(MB / 7)],
    ["authorization", "Authorization: ".repeat(MB / 15)],
    ["mixed", `key=${fake(40, 1)} `.repeat(MB / 45)],
    ["dotted names", "a.".repeat(MB / 2) + "key=" + fake(40, 2)],
    ["separators", "=:".repeat(MB / 2)],
    ["escaped newlines", "-----BEGIN PRIVATE KEY-----" + "\\n".repeat(MB / 2)],
  ];

  it.each(ADVERSARIAL)("scans 1 MB of %s quickly", (_name, text) => {
    const t0 = performance.now();
    findSecrets(text);
    redactSecrets(text);
    expect(performance.now() - t0).toBeLessThan(2_000);
  });
});
