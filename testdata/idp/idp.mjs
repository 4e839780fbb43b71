// A real OpenID provider for toolshelf's identity tests: oidc-provider on
// 127.0.0.1 at a free port, with the people, clients and signing keys the
// test gives it in a JSON file (argv[2]):
//
//   {"keys": {"keys": [private JWK, ...]},      the provider's signing keys
//    "people": {"alice": {"email": ..., "groups": [...]}, ...},
//    "clients": [oidc-provider client metadata, ...],
//    "audience": "toolshelf",                  the aud of every access token
//    "format": "jwt" | "opaque",               access tokens' format
//    "scope": "mcp offline_access"}            what resource servers allow
//
// A client whose client_id is a person's name gets client_credentials
// tokens speaking for that person (sub, email, groups): the tests get a
// person's token without a browser. The browser flow (authorization code
// with PKCE, the provider's own login and consent pages) works for any
// person listed, any password.
//
// Beside the provider's own endpoints:
//   POST /_test/rotate   {"keys": [...]}: the provider signs with these
//                        from now on, and publishes only them
//   the token endpoint takes RFC 8693 token exchange
//   (urn:ietf:params:oauth:grant-type:token-exchange), which oidc-provider
//   does not have: written here with its keys and jose, said so.
import http from 'node:http';
import fs from 'node:fs';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const people = spec.people || {};

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

function personClaims(sub) {
  const p = people[sub];
  if (!p) return {};
  const out = {};
  if (p.email) out.email = p.email;
  if (p.groups) out.groups = p.groups;
  return out;
}

function build(keys) {
  const provider = new Provider(issuer, {
    clients: spec.clients || [],
    jwks: keys,
    findAccount: async (ctx, sub) => (people[sub] ? {
      accountId: sub,
      claims: async () => ({ sub, ...personClaims(sub) }),
    } : undefined),
    claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
    scopes: ['openid', 'offline_access', 'email', 'profile', 'groups', ...(spec.scope || 'mcp').split(' ')],
    pkce: { required: () => true },
    // The ID token carries the claims its scopes ask for (email, groups),
    // as most providers' do.
    conformIdTokenClaims: false,
    ttl: { AccessToken: spec.ttl || 600, ClientCredentials: spec.ttl || 600 },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:toolshelf',
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: spec.scope || 'mcp',
          audience: spec.audience || 'toolshelf',
          accessTokenFormat: spec.format || 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    extraTokenClaims: async (ctx, token) => personClaims(token.accountId || token.clientId),
    // A client named after a person speaks for them.
    issueRefreshToken: async () => true,
  });
  provider.proxy = false;

  // RFC 8693: a token of this provider (the subject token) for one with
  // another audience, the same person, the exchanging client as actor.
  provider.registerGrantType(EXCHANGE, async (ctx) => {
    const { subject_token: subject, subject_token_type: kind, audience, resource, scope } = ctx.oidc.params;
    const fail = (code, description) => {
      ctx.status = 400;
      ctx.body = { error: code, error_description: description };
    };
    if (kind !== ACCESS_TOKEN_TYPE) return fail('invalid_request', 'subject_token_type must be an access token');
    let claims;
    try {
      ({ payload: claims } = await jose.jwtVerify(subject, jose.createLocalJWKSet(publicKeys(current.keys)), { issuer }));
    } catch (err) {
      return fail('invalid_grant', `subject_token: ${err.code || err.message}`);
    }
    const aud = audience || resource;
    if (!aud) return fail('invalid_target', 'audience or resource is required');
    const signing = current.keys.keys[0];
    const key = await jose.importJWK(signing, 'RS256');
    const now = Math.floor(Date.now() / 1000);
    const token = await new jose.SignJWT({
      scope: scope || claims.scope, ...personClaims(claims.sub), act: { sub: ctx.oidc.client.clientId },
    }).setProtectedHeader({ alg: 'RS256', kid: signing.kid, typ: 'at+jwt' })
      .setIssuer(issuer).setSubject(claims.sub).setAudience(aud).setIssuedAt(now).setExpirationTime(now + 600)
      .setJti(crypto.randomUUID()).sign(key);
    exchanges.push({ client: ctx.oidc.client.clientId, sub: claims.sub, audience: aud });
    ctx.body = { access_token: token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: 600 };
  }, ['subject_token', 'subject_token_type', 'audience', 'resource', 'requested_token_type', 'actor_token', 'actor_token_type']);
  return provider;
}

function publicKeys(set) {
  return { keys: set.keys.map(({ d, p, q, dp, dq, qi, ...pub }) => pub) };
}

const exchanges = [];
let current = { keys: spec.keys, provider: build(spec.keys) };

server.on('request', async (req, res) => {
  if (req.url === '/_test/rotate' && req.method === 'POST') {
    let body = '';
    for await (const chunk of req) body += chunk;
    const keys = JSON.parse(body);
    current = { keys, provider: build(keys) };
    res.writeHead(204).end();
    return;
  }
  if (req.url === '/_test/exchanges') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(exchanges));
    return;
  }
  current.provider.callback()(req, res);
});

console.error(`idp listening on ${issuer}`);
