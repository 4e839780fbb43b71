package fleet

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolshelf/toolshelf/identity"
)

// Replicas prove who they are with the fleet key, a secret every replica
// is given as a file and the store does not hold: someone who can write
// to the store (its password, a backup restored, a compromised client of
// it) can add a replica row or move a session to one, but cannot sign a
// heartbeat or a forwarded request. A replica sends requests only to an
// address whose signed heartbeat it checked, and serves a forwarded
// request only when its signature holds. The client's bearer token stays
// with the replica that checked it: what travels is the person it
// authenticated, sealed with the fleet key.

// keys are the fleet key's two uses, derived apart.
type keys struct {
	sign []byte
	seal cipher.AEAD
}

func newKeys(key []byte) (*keys, error) {
	if len(key) != 32 {
		return nil, errors.New("fleet: the fleet key must be 32 bytes")
	}
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("toolshelf fleet " + label))
		return m.Sum(nil)
	}
	block, err := aes.NewCipher(derive("seal"))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &keys{sign: derive("sign"), seal: aead}, nil
}

// mac signs parts, each length-prefixed so that no two lists sign alike.
func (k *keys) mac(parts ...string) string {
	m := hmac.New(sha256.New, k.sign)
	for _, p := range parts {
		m.Write([]byte(strconv.Itoa(len(p)) + ":" + p))
	}
	return hex.EncodeToString(m.Sum(nil))
}

func (k *keys) valid(sig string, parts ...string) bool {
	return hmac.Equal([]byte(sig), []byte(k.mac(parts...)))
}

// MAC signs parts with the fleet key (apart from the fleet's own uses):
// what the fleet keeps in the store and trusts only when signed, such as
// learned pairs (learn.Store.SignPairs).
func (m *Member) MAC(parts ...string) string {
	return m.keys.mac(append([]string{"data"}, parts...)...)
}

// heartbeat is the signature of a replica's row: its id and address at a
// time (unix seconds).
func (k *keys) heartbeat(id, address string, at int64) string {
	return k.mac("heartbeat", id, address, strconv.FormatInt(at, 10))
}

// skew is how far apart two replicas' clocks may be.
const skew = 30 * time.Second

// trusted reports whether a replica row is one a replica of this fleet
// signed lately.
func (k *keys) trusted(id, address string, at int64, sig string, now time.Time) bool {
	age := now.Sub(time.Unix(at, 0))
	return k.valid(sig, "heartbeat", id, address, strconv.FormatInt(at, 10)) && age < gone+skew && age > -skew
}

// The headers of a forwarded request.
const (
	// signatureHeader is "t=<unix seconds>,sig=<hex>": the sender's
	// signature of the request (see forwardSig).
	signatureHeader = "Toolshelf-Fleet-Signature"
	// principalHeader is who the sender authenticated, sealed: a person
	// (their claims and token), or nothing for a static token of the
	// path's profile.
	principalHeader = "Toolshelf-Principal"
)

// forwardSig signs what a forwarded request is: who sent it, to whom
// (the receiving replica's id, new at each start: a request captured and
// replayed to another replica, or to its own after a restart, does not
// hold), when, its nonce, method, path and query, session, body and
// principal.
func (k *keys) forwardSig(from, to string, at int64, nonce string, r *http.Request, body []byte, principal string) string {
	return k.mac("forward", from, to, strconv.FormatInt(at, 10), nonce, r.Method, r.URL.RequestURI(), r.Header.Get(sessionHeader), sha256Hex(body), principal)
}

// forwardValid is how long a forwarded request's signature holds.
const forwardValid = time.Minute

// maxNonces bounds the forwarded requests remembered: past it, a
// forwarded request is refused until some expire (a fleet sending on
// more than this a minute is under attack or misconfigured).
const maxNonces = 200_000

// nonces remembers the nonces of the forwarded requests served while
// their signatures hold, so that a request replayed (captured on the
// way, sent again) is refused: a signed "pay" runs once.
type nonces struct {
	mu   sync.Mutex
	seen map[string]spent
}

// spent is a nonce served: until when its signature holds.
type spent struct {
	until time.Time
}

// spend records nonce as served, and reports whether it may be: not for
// a nonce seen before (a request is checked once: see Vouched), nor past
// the bound.
func (n *nonces) spend(nonce string, until, now time.Time) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = map[string]spent{}
	}
	if _, ok := n.seen[nonce]; ok {
		return ErrReplayed
	}
	if len(n.seen) >= maxNonces {
		for k, s := range n.seen {
			if now.After(s.until) {
				delete(n.seen, k)
			}
		}
		if len(n.seen) >= maxNonces {
			return fmt.Errorf("fleet: %d forwarded requests within a minute; refused until some expire", maxNonces)
		}
	}
	n.seen[nonce] = spent{until: until}
	return nil
}

// ErrReplayed is a forwarded request whose signature holds but which was
// served before: a replay.
var ErrReplayed = errors.New("fleet: a forwarded request served before (a replay)")

// sealedPrincipal is the person ctx carries, sealed with the fleet key
// for the replica a request is sent on to ("" for none).
func (m *Member) sealedPrincipal(ctx context.Context) (string, error) {
	p := identity.PersonOf(ctx)
	if p == nil {
		return "", nil
	}
	plain, err := identity.Encode(p)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, m.keys.seal.NonceSize())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(m.keys.seal.Seal(nonce, nonce, plain, []byte("principal"))), nil
}

// sign marks r, which this replica sends on, as the fleet's: the
// client's Authorization is removed, and the sealed principal goes in its
// place.
func (m *Member) sign(r *http.Request, body []byte, principal, to string) {
	at := time.Now().Unix()
	r.Header.Del("Authorization")
	r.Header.Del(principalHeader)
	if principal != "" {
		r.Header.Set(principalHeader, principal)
	}
	r.Header.Set(forwardedHeader, m.id)
	nonce := make([]byte, 16)
	rand.Read(nonce)
	n := hex.EncodeToString(nonce)
	r.Header.Set(signatureHeader, fmt.Sprintf("t=%d,n=%s,sig=%s", at, n, m.keys.forwardSig(m.id, to, at, n, r, body, principal)))
}

// ErrForged is a request that says another replica sent it on, and whose
// signature does not hold.
var ErrForged = errors.New("fleet: a request marked as sent on by a replica, without a valid signature of the fleet key")

// checkedHeader marks a request whose signature this replica checked:
// its value is the replica's own secret (Member.checked), so that only
// this process can have set it. The gateway's authorization and the
// relay both ask Vouched; the second reads the mark instead of the body
// and the signature again, and a nonce is spent once.
const checkedHeader = "X-Toolshelf-Fleet-Checked"

// Vouched reports whether r was sent on by a replica of this fleet: ok
// when its signature holds, with the person the sender authenticated (nil
// for a static token). A request marked as forwarded whose signature does
// not hold is ErrForged; one not so marked is neither. r's body is read
// and put back, once: a request asked about again is known by its mark.
func (m *Member) Vouched(r *http.Request) (p *identity.Person, ok bool, err error) {
	from := r.Header.Get(forwardedHeader)
	if from == "" {
		return nil, false, nil
	}
	if mark := r.Header.Get(checkedHeader); mark != "" && hmac.Equal([]byte(mark), []byte(m.checked)) {
		return m.principal(r.Header.Get(principalHeader))
	}
	r.Header.Del(checkedHeader) // anyone else's is no mark
	var at int64
	var sig, nonce string
	for _, kv := range strings.Split(r.Header.Get(signatureHeader), ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "t":
			at, _ = strconv.ParseInt(v, 10, 64)
		case "n":
			nonce = v
		case "sig":
			sig = v
		}
	}
	body, tooLarge := readBody(r)
	if tooLarge {
		return nil, false, ErrForged
	}
	principal := r.Header.Get(principalHeader)
	now := time.Now()
	age := now.Sub(time.Unix(at, 0))
	if at == 0 || len(nonce) != 32 || age > forwardValid || age < -skew ||
		!hmac.Equal([]byte(sig), []byte(m.keys.forwardSig(from, m.id, at, nonce, r, body, principal))) {
		return nil, false, ErrForged
	}
	// Held until the signature no longer would (with the clocks' skew).
	if err := m.nonces.spend(nonce, time.Unix(at, 0).Add(forwardValid+skew), now); err != nil {
		return nil, false, err
	}
	r.Header.Set(checkedHeader, m.checked)
	return m.principal(principal)
}

// principal opens the person a forwarded request carries sealed (nil for
// none: a static token).
func (m *Member) principal(principal string) (p *identity.Person, ok bool, err error) {
	if principal == "" {
		return nil, true, nil
	}
	sealed, err := base64.RawURLEncoding.DecodeString(principal)
	n := m.keys.seal.NonceSize()
	if err != nil || len(sealed) <= n {
		return nil, false, ErrForged
	}
	plain, err := m.keys.seal.Open(nil, sealed[:n], sealed[n:], []byte("principal"))
	if err != nil {
		return nil, false, ErrForged
	}
	if p, err = identity.Decode(plain); err != nil {
		return nil, false, ErrForged
	}
	return p, true, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
