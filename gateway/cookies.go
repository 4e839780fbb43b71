package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// CookieSeal signs what a browser carries between two requests of a
// sign-in (a flow's state and verifier, a session) into a cookie value,
// payload.mac, and reads back only what it signed, for the kind it was
// signed for. The console's sign-in and a person's sign-in links use it.
type CookieSeal struct{ key []byte }

// NewCookieSeal returns a seal of key (32 random bytes, say).
func NewCookieSeal(key []byte) *CookieSeal { return &CookieSeal{key: key} }

// Seal signs v, as JSON, for kind.
func (c *CookieSeal) Seal(kind string, v any) string {
	data, _ := json.Marshal(v)
	payload := base64.RawURLEncoding.EncodeToString(data)
	return payload + "." + c.mac(kind, payload)
}

// Open reads a value sealed for kind into v, and reports whether it was.
func (c *CookieSeal) Open(kind, value string, v any) bool {
	payload, mac, ok := strings.Cut(value, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(c.mac(kind, payload))) {
		return false
	}
	data, err := base64.RawURLEncoding.DecodeString(payload)
	return err == nil && json.Unmarshal(data, v) == nil
}

func (c *CookieSeal) mac(kind, payload string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(kind + "\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
