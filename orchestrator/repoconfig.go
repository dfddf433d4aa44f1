package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/familiar-dev/familiar/protocol"
)

// repoConfig is the repository's .familiar/config.yaml: what a team keeps
// with its code for familiar. Settings win over it.
type repoConfig struct {
	// MergeVerify is the merge queue's verify command.
	MergeVerify string `yaml:"mergeVerify"`
	// TestCommands are the test and lint commands an auditor may run
	// (nil: not set here).
	TestCommands []string `yaml:"testCommands"`
}

// readRepoConfig reads .familiar/config.yaml; none is the zero config. An
// unreadable or broken file is -32003 naming it.
func (o *Orchestrator) readRepoConfig() (repoConfig, error) {
	path := filepath.Join(o.cfg.Repo.Root(), ".familiar", "config.yaml")
	var cfg repoConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, protocol.FailedPrecondition(fmt.Sprintf("reading %s: %v", path, err), "")
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return cfg, protocol.FailedPrecondition(fmt.Sprintf("%s is not valid YAML: %v; fix it", path, err), "")
	}
	return cfg, nil
}

// testCommands are the commands an auditor may run: the settings'
// testCommands, else the repository's config, else nil (familiar's
// defaults, profiles.DefaultTestCommands).
func (o *Orchestrator) testCommands() ([]string, error) {
	if c := o.settingsNow().TestCommands; c != nil {
		return c, nil
	}
	cfg, err := o.readRepoConfig()
	if err != nil {
		return nil, err
	}
	return cfg.TestCommands, nil
}
