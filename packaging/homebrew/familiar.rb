# familiar's Homebrew formula. `make dist` writes dist/familiar.rb from this
# file, with the release's version in the URLs and each archive's sha256 in
# place of the @…@ tokens; that file is the one to publish in a tap.
class Familiar < Formula
  desc "Run several Claude Code agents at once, each in its own git worktree"
  homepage "https://github.com/familiar-dev/familiar"
  license "Apache-2.0"

  on_macos do
    on_arm do
      url "https://github.com/familiar-dev/familiar/releases/download/v@VERSION@/familiar-darwin-arm64.tar.gz"
      sha256 "@SHA256_DARWIN_ARM64@"
    end
    on_intel do
      url "https://github.com/familiar-dev/familiar/releases/download/v@VERSION@/familiar-darwin-amd64.tar.gz"
      sha256 "@SHA256_DARWIN_AMD64@"
    end
  end

  on_linux do
    on_arm do
      url "https://github.com/familiar-dev/familiar/releases/download/v@VERSION@/familiar-linux-arm64.tar.gz"
      sha256 "@SHA256_LINUX_ARM64@"
    end
    on_intel do
      url "https://github.com/familiar-dev/familiar/releases/download/v@VERSION@/familiar-linux-amd64.tar.gz"
      sha256 "@SHA256_LINUX_AMD64@"
    end
  end

  depends_on "git"

  def install
    bin.install "familiar"
  end

  def caveats
    <<~EOS
      familiar drives your own Claude Code CLI (claude), logged in as usual:
        npm install -g @anthropic-ai/claude-code
      Then check the setup with: familiar doctor
    EOS
  end

  test do
    assert_match "familiar #{version}", shell_output("#{bin}/familiar --version")
    assert_match "Apache License", shell_output("#{bin}/familiar version --notices")
  end
end
