package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Tasks run as the user's own Claude. familiar gives each session its own
// CLAUDE_CONFIG_DIR (state, transcripts, trust, hooks stay familiar's), but
// points the CLI's credential store at the user's with
// CLAUDE_SECURESTORAGE_CONFIG_DIR (CLI 2.1.330: the store's directory, ""
// meaning ~/.claude; on macOS it also names the Keychain item). So every
// task reads and refreshes the very login the user's own claude uses, the
// way two claude processes of the user share it: the CLI re-reads the file
// when its mtime changes and writes it back with a compare on the refresh
// token. Copies or links would not do: the CLI opens .credentials.json with
// O_NOFOLLOW (a symlink is refused) and replaces it on write (a hard link or
// a copy would keep a refresh token the server has already rotated).

// Auth methods, in the order the CLI prefers them.
const (
	AuthBedrock      = "bedrock"        // CLAUDE_CODE_USE_BEDROCK (AWS credentials)
	AuthVertex       = "vertex"         // CLAUDE_CODE_USE_VERTEX (Google credentials)
	AuthFoundry      = "foundry"        // CLAUDE_CODE_USE_FOUNDRY (Azure credentials)
	AuthToken        = "auth_token"     // ANTHROPIC_AUTH_TOKEN (a bearer token, e.g. a gateway)
	AuthAPIKey       = "api_key"        // ANTHROPIC_API_KEY
	AuthAPIKeyHelper = "api_key_helper" // apiKeyHelper in the user's settings.json
	AuthOAuthToken   = "oauth_token"    // CLAUDE_CODE_OAUTH_TOKEN (claude setup-token)
	AuthLogin        = "claude_login"   // the claude.ai login of `claude login` (credentials file or Keychain)
	AuthNone         = "none"
)

// Auth says how claude will authenticate in a task. It never holds a secret.
type Auth struct {
	Method string `json:"method"`           // one of the Auth* constants
	Source string `json:"source,omitempty"` // where it comes from: a variable name, a file path, "macOS Keychain"
	// ExpiresAt is when a claude.ai login's access token expires (claude
	// refreshes it itself while a refresh token is there).
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Problem, when set, is why claude will not be able to log in, with the
	// fix. A task started anyway would only show "Not logged in".
	Problem string `json:"problem,omitempty"`
}

// oauthFile is the part of .credentials.json familiar reads (never logged).
type oauthFile struct {
	ClaudeAiOauth *struct {
		AccessToken  string `json:"accessToken"`
		RefreshToken string `json:"refreshToken"`
		ExpiresAt    int64  `json:"expiresAt"` // Unix ms
	} `json:"claudeAiOauth"`
}

// DetectAuth finds how claude will authenticate with the environment env
// (familiar's own; a task inherits it) and the user's claude config: the
// same order the CLI uses. now decides whether a login has expired.
func DetectAuth(env []string, now time.Time) Auth {
	set := func(k string) bool { return LookupEnv(env, k) != "" }
	truthy := func(k string) bool {
		v := LookupEnv(env, k)
		return v != "" && v != "0" && v != "false"
	}
	switch {
	case truthy("CLAUDE_CODE_USE_BEDROCK"):
		return Auth{Method: AuthBedrock, Source: "CLAUDE_CODE_USE_BEDROCK"}
	case truthy("CLAUDE_CODE_USE_VERTEX"):
		return Auth{Method: AuthVertex, Source: "CLAUDE_CODE_USE_VERTEX"}
	case truthy("CLAUDE_CODE_USE_FOUNDRY"):
		return Auth{Method: AuthFoundry, Source: "CLAUDE_CODE_USE_FOUNDRY"}
	case set("ANTHROPIC_AUTH_TOKEN"):
		return Auth{Method: AuthToken, Source: "ANTHROPIC_AUTH_TOKEN"}
	case set("ANTHROPIC_API_KEY"):
		return Auth{Method: AuthAPIKey, Source: "ANTHROPIC_API_KEY"}
	}
	uc := UserConfigOf(env)
	if helper, _ := uc.settings()["apiKeyHelper"].(string); helper != "" {
		return Auth{Method: AuthAPIKeyHelper, Source: filepath.Join(uc.Dir, "settings.json")}
	}
	if path := managedSettingsPath(); path != "" {
		if b, err := os.ReadFile(path); err == nil {
			var doc struct {
				APIKeyHelper string `json:"apiKeyHelper"`
			}
			if json.Unmarshal(b, &doc) == nil && doc.APIKeyHelper != "" {
				return Auth{Method: AuthAPIKeyHelper, Source: path}
			}
		}
	}
	if set("CLAUDE_CODE_OAUTH_TOKEN") {
		return Auth{Method: AuthOAuthToken, Source: "CLAUDE_CODE_OAUTH_TOKEN"}
	}
	path := uc.CredentialsPath()
	if b, err := os.ReadFile(path); err == nil {
		var f oauthFile
		if json.Unmarshal(b, &f) == nil && f.ClaudeAiOauth != nil && (f.ClaudeAiOauth.AccessToken != "" || f.ClaudeAiOauth.RefreshToken != "") {
			a := Auth{Method: AuthLogin, Source: path}
			if f.ClaudeAiOauth.ExpiresAt > 0 {
				a.ExpiresAt = time.UnixMilli(f.ClaudeAiOauth.ExpiresAt)
			}
			switch {
			case f.ClaudeAiOauth.RefreshToken != "":
				// claude refreshes an expired token itself.
			case f.ClaudeAiOauth.AccessToken == "" || (!a.ExpiresAt.IsZero() && !a.ExpiresAt.After(now)):
				a.Problem = fmt.Sprintf("the claude.ai login in %s has expired and cannot be refreshed; %s", path, AuthFix)
			}
			return a
		}
	}
	if keychainHasLogin(uc) {
		return Auth{Method: AuthLogin, Source: "macOS Keychain"}
	}
	return Auth{Method: AuthNone, Problem: "claude is not logged in (no ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN, cloud provider or claude.ai login found); " + AuthFix}
}

// String says which method claude will use, for doctor and logs.
func (a Auth) String() string {
	s := a.Method
	if a.Source != "" {
		s += " (" + a.Source + ")"
	}
	if a.Problem != "" {
		s += ": " + a.Problem
	}
	return s
}

// managedSettingsPath is where an administrator's settings for every claude
// on the machine live (they can set an apiKeyHelper).
func managedSettingsPath() string {
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/ClaudeCode/managed-settings.json"
	case "linux":
		return "/etc/claude-code/managed-settings.json"
	}
	return ""
}

// keychainHasLogin reports whether the macOS Keychain holds the user's
// claude.ai login (the item's existence only: the secret is not read).
func keychainHasLogin(uc UserConfig) bool {
	if runtime.GOOS != "darwin" {
		return false
	}
	service, ok := keychainService(uc.Custom, uc.Dir)
	if !ok {
		return true // the name cannot be told here; unknown is not "none"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "/usr/bin/security", "find-generic-password", "-s", service).Run() == nil
}

// keychainService is the name of the Keychain item in which claude keeps a
// claude.ai login on macOS, derived the way CLI 2.1.330 does
// (docs/CLAUDE-CLI.md §8.1): "Claude Code-credentials", plus "-" and the
// first 8 hex digits of the SHA-256 of the credential store's directory
// when that is not the default. custom says it is not; dir is then the
// directory as the CLI sees it (CLAUDE_SECURESTORAGE_CONFIG_DIR, else
// CLAUDE_CONFIG_DIR). The CLI hashes the directory in Unicode NFC; ok is
// false for a name with characters beyond ASCII, which familiar does not
// normalize.
func keychainService(custom bool, dir string) (service string, ok bool) {
	const base = "Claude Code-credentials"
	if !custom {
		return base, true
	}
	for _, r := range dir {
		if r >= 0x80 {
			return "", false
		}
	}
	sum := sha256.Sum256([]byte(dir))
	return base + "-" + hex.EncodeToString(sum[:])[:8], true
}

// cliKeychainService is keychainService as a claude started with env
// decides it: CLAUDE_SECURESTORAGE_CONFIG_DIR when set ("" meaning the
// default), else CLAUDE_CONFIG_DIR when set, else the default.
func cliKeychainService(env []string) (string, bool) {
	if d, set := lookupEnvSet(env, "CLAUDE_SECURESTORAGE_CONFIG_DIR"); set {
		return keychainService(d != "", d)
	}
	d := LookupEnv(env, "CLAUDE_CONFIG_DIR")
	return keychainService(d != "", d)
}

// lookupEnvSet is LookupEnv that also says whether key is set at all.
func lookupEnvSet(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}
