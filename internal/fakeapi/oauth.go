package fakeapi

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// OAuth fakes the claude.ai login servers the CLI talks to besides the
// Messages API: the token endpoint it refreshes an expired login with
// (https://platform.claude.com/v1/oauth/token; CLAUDE_CODE_CUSTOM_OAUTH_URL
// only accepts Anthropic's own hosts) and the profile endpoint
// (https://api.anthropic.com/api/oauth/profile). The CLI reaches them through
// HTTPS_PROXY, so OAuth is an HTTPS proxy on loopback that answers those
// hosts itself, with a certificate from a throwaway CA the CLI is told to
// trust (NODE_EXTRA_CA_CERTS). It never forwards anything anywhere.
//
// Like the real server it rotates refresh tokens: a refresh token works
// once, a second use gets 400 invalid_grant. Two claude processes that each
// refresh from their own copy of a login therefore break each other, as
// they would for real.
type OAuth struct {
	proxy  net.Listener
	tls    *httptest.Server
	caPath string
	dir    string
	wg     sync.WaitGroup

	mu        sync.Mutex
	refreshes []Refresh
	used      map[string]bool
	n         int
}

// Refresh is one call of the token endpoint.
type Refresh struct {
	RefreshToken string // the token the CLI sent
	Granted      bool   // false: it was already used (invalid_grant)
	AccessToken  string // what it got, when granted
	NewRefresh   string
	At           time.Time
}

// StartOAuth starts the fake login servers. Close them when done.
func StartOAuth() (*OAuth, error) {
	dir, err := os.MkdirTemp("", "fakeapi-oauth-")
	if err != nil {
		return nil, fmt.Errorf("fake oauth: %w", err)
	}
	o := &OAuth{dir: dir, used: map[string]bool{}}
	caPEM, leaf, err := newCertificates([]string{"platform.claude.com", "api.anthropic.com", "claude.ai"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	o.caPath = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(o.caPath, caPEM, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fake oauth: %w", err)
	}
	o.tls = httptest.NewUnstartedServer(http.HandlerFunc(o.serveHTTP))
	o.tls.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	o.tls.StartTLS()
	o.proxy, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		o.tls.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fake oauth: %w", err)
	}
	o.wg.Add(1)
	go o.acceptLoop()
	return o, nil
}

// Env points a claude process at the fake login servers: the proxy for
// HTTPS (loopback, where the fake Messages API listens, is not proxied) and
// the CA to trust.
func (o *OAuth) Env() map[string]string {
	return map[string]string{
		"HTTPS_PROXY":         "http://" + o.proxy.Addr().String(),
		"NO_PROXY":            "127.0.0.1,localhost",
		"NODE_EXTRA_CA_CERTS": o.caPath,
	}
}

// Refreshes returns the token endpoint's calls so far.
func (o *OAuth) Refreshes() []Refresh {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Refresh(nil), o.refreshes...)
}

// Close stops both servers and removes the CA file.
func (o *OAuth) Close() {
	o.proxy.Close()
	o.tls.CloseClientConnections()
	o.tls.Close()
	o.wg.Wait()
	os.RemoveAll(o.dir)
}

func (o *OAuth) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/oauth/token" {
		o.handleToken(w, r)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	writeJSON(w, http.StatusOK, []byte(`{}`))
}

func (o *OAuth) handleToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		GrantType    string `json:"grant_type"`
		RefreshToken string `json:"refresh_token"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
	o.mu.Lock()
	o.n++
	ref := Refresh{RefreshToken: req.RefreshToken, At: time.Now()}
	if req.GrantType == "refresh_token" && req.RefreshToken != "" && !o.used[req.RefreshToken] {
		o.used[req.RefreshToken] = true
		ref.Granted = true
		ref.AccessToken = fmt.Sprintf("sk-ant-oat01-fake-refreshed-%d", o.n)
		ref.NewRefresh = fmt.Sprintf("sk-ant-ort01-fake-rotated-%d", o.n)
	}
	o.refreshes = append(o.refreshes, ref)
	o.mu.Unlock()
	if !ref.Granted {
		writeJSON(w, http.StatusBadRequest, []byte(`{"error":"invalid_grant","error_description":"Refresh token not found or invalid"}`))
		return
	}
	b, _ := json.Marshal(map[string]any{
		"access_token":  ref.AccessToken,
		"refresh_token": ref.NewRefresh,
		"expires_in":    8 * 3600,
		"scope":         "user:inference user:profile",
		"token_type":    "Bearer",
	})
	writeJSON(w, http.StatusOK, b)
}

func (o *OAuth) acceptLoop() {
	defer o.wg.Done()
	for {
		c, err := o.proxy.Accept()
		if err != nil {
			return
		}
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			o.tunnel(c)
		}()
	}
}

// tunnel answers one CONNECT by joining it to the TLS server, whatever host
// it names.
func (o *OAuth) tunnel(c net.Conn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil || req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	up, err := net.Dial("tcp", o.tls.Listener.Addr().String())
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, c)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(c, up)
	c.Close()
	<-done
}

// newCertificates makes a throwaway CA and a server certificate it signs for
// hosts. It returns the CA as PEM and the server's key pair.
func newCertificates(hosts []string) ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("fake oauth CA: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "familiar fakeapi test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("fake oauth CA: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("fake oauth cert: %w", err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: hosts[0]},
		DNSNames:     hosts,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("fake oauth cert: %w", err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: leafKey}, nil
}

// writeJSON answers with a JSON body, as the real login servers do.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
