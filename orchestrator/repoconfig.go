package orchestrator

import (
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/repoconfig"
)

// readRepoConfig reads the repository's .familiar/config.yaml (what a team
// keeps with its code for familiar; settings win over it); none is the zero
// config. An unreadable or broken file, or one with a key familiar does not
// know, is -32003 naming the file, the line and the key.
func (o *Orchestrator) readRepoConfig() (repoconfig.Config, error) {
	cfg, err := repoconfig.Load(o.cfg.Repo.Root())
	if err != nil {
		return cfg, protocol.FailedPrecondition(err.Error()+"; fix it", "")
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
