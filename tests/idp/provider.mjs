// A real OpenID Provider for lockgate's tests: panva's oidc-provider, certified, unchanged.
//
//   node provider.mjs SETTINGS.json
//
// SETTINGS names the port, the issuer URL, the signing keys (a private JWKS) and the file of
// people. The people file ({"ed": {"email": ..., "groups": [...], "amr": [...]}}) is read again
// at every sign-in, so a test takes a person out of a group by rewriting it. Sign-in is scripted:
// the interaction signs in the person the request's login_hint names (with the amr and acr the
// people file gives them) and grants what the client asked for; there is no password page. The
// clients are lockgate's ("lockgate"), another application's ("other-app"), and lockgate's
// command line ("lockgate-cli"): a native public client, whose loopback redirect takes any port
// (RFC 8252) and which authenticates with PKCE alone.
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const settings = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const people = () => JSON.parse(readFileSync(settings.people, 'utf8'));
const keys = JSON.parse(readFileSync(settings.keys, 'utf8'));
const client = (id) => ({
  client_id: id,
  client_secret: `${id}-test-secret`,
  redirect_uris: ['http://127.0.0.1/callback'],
  response_types: ['code'],
  grant_types: ['authorization_code'],
  token_endpoint_auth_method: 'client_secret_basic',
});

const commandLine = {
  client_id: 'lockgate-cli',
  application_type: 'native',
  redirect_uris: ['http://127.0.0.1/callback'],
  response_types: ['code'],
  grant_types: ['authorization_code'],
  token_endpoint_auth_method: 'none',
};

const provider = new Provider(settings.issuer, {
  clients: [client('lockgate'), client('other-app'), commandLine],
  jwks: keys,
  claims: {
    acr: null,
    amr: null,
    auth_time: null,
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: false }, claimsParameter: { enabled: true } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  ttl: { IdToken: 3600, AccessToken: 3600, AuthorizationCode: 60, Session: 3600, Interaction: 600, Grant: 3600 },
  async findAccount(ctx, id) {
    const person = people()[id];
    if (!person) return undefined;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          email: person.email,
          email_verified: true,
          preferred_username: id,
          groups: person.groups || [],
        };
      },
    };
  },
});

provider.use(async (ctx, next) => {
  const match = ctx.path.match(/^\/interaction\/([^/]+)$/);
  if (!match || ctx.method !== 'GET') return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  let result;
  if (details.prompt.name === 'login') {
    const id = details.params.login_hint;
    const person = people()[id];
    if (!person) {
      ctx.status = 403;
      ctx.body = `no person ${id}`;
      return undefined;
    }
    result = { login: { accountId: id, amr: person.amr || ['pwd'], acr: person.acr || '0' } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    grant.addOIDCScope(details.params.scope);
    result = { consent: { grantId: await grant.save() } };
  }
  const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
  ctx.redirect(returnTo);
  return undefined;
});

provider.listen(settings.port, '127.0.0.1', () => {
  process.stdout.write(`listening ${settings.issuer}\n`);
});
