/** Credentials the hostile upstream (./hostile-server.ts) pastes into its definitions and answers, for tests to look for. */
export const HOSTILE_STRIPE_KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dcQ9xZ";
export const HOSTILE_DSN = "postgres://app:Sup3rS3cretPassw0rdX9@db.internal:5432/prod";
