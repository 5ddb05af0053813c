#!/bin/sh
# install.sh — build git-norma from this checkout and install it where git can find it.
#
#   ./install.sh                  installs into $GOBIN, else $HOME/.local/bin
#   ./install.sh --bin-dir DIR    installs into DIR (or set GIT_NORMA_BIN_DIR)
#   ./install.sh --man-dir DIR    man pages into DIR (default: DIR/../share/man of the binary)
#
# Also installs the man pages (so `git norma --help` works) and the bash completion. Safe to
# re-run: it rebuilds and replaces everything. Needs Go (the version in go.mod) and git 2.38+.
set -eu

die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

bin_dir=${GIT_NORMA_BIN_DIR:-}
man_dir=${GIT_NORMA_MAN_DIR:-}
while [ $# -gt 0 ]; do
	case $1 in
	--bin-dir) [ $# -ge 2 ] || die "--bin-dir needs a directory"; bin_dir=$2; shift 2 ;;
	--bin-dir=*) bin_dir=${1#--bin-dir=}; shift ;;
	--man-dir) [ $# -ge 2 ] || die "--man-dir needs a directory"; man_dir=$2; shift 2 ;;
	--man-dir=*) man_dir=${1#--man-dir=}; shift ;;
	-h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $1 (see ./install.sh --help)" ;;
	esac
done

src=$(cd "$(dirname "$0")" && pwd)
[ -f "$src/go.mod" ] || die "run me from a git-norma checkout (no go.mod next to $0)"

# version_ge A B: is dotted version A >= B?
version_ge() {
	[ "$(printf '%s\n%s\n' "$2" "$1" | sort -t. -k1,1n -k2,2n -k3,3n | head -n1)" = "$2" ]
}

command -v go >/dev/null 2>&1 || die "Go is not installed: get it from https://go.dev/dl/ and re-run ./install.sh"
need_go=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$src/go.mod")
have_go=$(go env GOVERSION | sed 's/^go//; s/[^0-9.].*//')
version_ge "$have_go" "$need_go" || die "Go $have_go is too old: git-norma needs Go $need_go or newer (https://go.dev/dl/)"

command -v git >/dev/null 2>&1 || die "git is not installed: git-norma needs git 2.38 or newer"
have_git=$(git version | sed -n 's/^git version \([0-9]*\.[0-9]*\).*/\1/p')
version_ge "$have_git" "2.38" || die "git $have_git is too old: git-norma needs git 2.38 or newer (for git merge-tree --write-tree)"

if [ -z "$bin_dir" ]; then
	bin_dir=$(go env GOBIN)
	[ -n "$bin_dir" ] || bin_dir=$HOME/.local/bin
fi
mkdir -p "$bin_dir" || die "cannot create $bin_dir"

version=$(git -C "$src" describe --tags --always --dirty 2>/dev/null || echo dev)
commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
printf 'building git-norma %s with Go %s ...\n' "$version" "$have_go"
# CGO_ENABLED=0: a static binary (nothing in git-norma needs cgo; SQLite is pure Go), which
# also starts faster than one linked against libc — git-norma runs on every hook.
(cd "$src" && CGO_ENABLED=0 go build -trimpath \
	-ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
	-o "$bin_dir/git-norma.tmp" ./cmd/git-norma) || die "go build failed"
mv -f "$bin_dir/git-norma.tmp" "$bin_dir/git-norma"
printf 'installed %s\n' "$bin_dir/git-norma"

# The man pages, where man finds them: <prefix>/share/man next to <prefix>/bin is on man-db's
# default search path for every PATH directory, so `git norma --help` (git runs
# `man git-norma`) works without setting MANPATH. The test suite runs this same command.
prefix=$(cd "$bin_dir/.." && pwd)
[ -n "$man_dir" ] || man_dir=$prefix/share/man
"$bin_dir/git-norma" man --install "$man_dir" || die "cannot install the man pages into $man_dir"

# The bash completion, where bash-completion loads it on demand (for ~/.local/bin that is
# ~/.local/share/bash-completion/completions).
completion_dir=$prefix/share/bash-completion/completions
mkdir -p "$completion_dir" && "$bin_dir/git-norma" completion bash > "$completion_dir/git-norma" ||
	die "cannot install the bash completion into $completion_dir"
printf 'installed the bash completion in %s\n' "$completion_dir/git-norma"

case ":$PATH:" in
*":$bin_dir:"*)
	git norma version ;;
*)
	"$bin_dir/git-norma" version
	printf '\n%s is not on your PATH, so git cannot find `git norma` yet. Add it:\n' "$bin_dir"
	printf '  export PATH="%s:$PATH"\n' "$bin_dir"
	printf 'and put that line in your shell profile (~/.profile, ~/.bashrc or ~/.zshrc).\n' ;;
esac

cat <<EOF

Shell completion for "git norma <TAB>" (git's own completion calls it):
  bash  loaded on demand from $completion_dir with bash-completion;
        without it, add to ~/.bashrc:  source <(git norma completion bash)
  zsh   git norma completion zsh > ~/.zfunc/_git-norma   (with fpath+=(~/.zfunc) before compinit in ~/.zshrc)
  fish  git norma completion fish > ~/.config/fish/conf.d/git-norma.fish
Manual: git norma --help (man pages in $man_dir), or git norma help <command> without man.
EOF
