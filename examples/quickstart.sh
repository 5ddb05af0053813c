#!/bin/sh
# quickstart.sh — watch git-norma take a task from "open" to landed on main, in a throwaway
# repository, with the bundled example agent (no API key, no network).
#
# Run ./install.sh first. The repository is left in place for you to inspect.
set -eu

die() { printf 'quickstart: %s\n' "$*" >&2; exit 1; }
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
[ -n "${NO_COLOR:-}" ] || [ ! -t 1 ] && step() { printf '\n$ %s\n' "$*"; }

here=$(cd "$(dirname "$0")" && pwd)

# Find the git-norma that install.sh put in place, even if its directory is not on PATH yet.
if ! command -v git-norma >/dev/null 2>&1; then
	for d in "${GIT_NORMA_BIN_DIR:-}" "$(go env GOBIN 2>/dev/null)" "$HOME/.local/bin"; do
		if [ -n "$d" ] && [ -x "$d/git-norma" ]; then PATH=$d:$PATH; break; fi
	done
fi
command -v git-norma >/dev/null 2>&1 || die "git-norma is not installed: run ./install.sh first"

work=$(mktemp -d "${TMPDIR:-/tmp}/git-norma-quickstart.XXXXXX")
printf 'building the example agent into %s/bin ...\n' "$work"
(cd "$here/.." && go build -o "$work/bin/norma-example-agent" ./examples/do-agent) || die "cannot build the example agent"

mkdir "$work/repo" && cd "$work/repo"
git init -q -b main
git config user.name >/dev/null 2>&1 || git config user.name "Quickstart User"
git config user.email >/dev/null 2>&1 || git config user.email "quickstart@example.com"
printf '# demo\n' > README.md
git add README.md && git commit -q -m "initial commit"

step "git norma init"
git norma init

step "configure the Do agent (everything else stays built in)"
cat > .norma/config.json <<JSON
{
  "agents": {
    "do": {"type": "exec", "cmd": ["$work/bin/norma-example-agent"], "timeout": "1m"}
  },
  "budgets": {"max_iterations": 3}
}
JSON
cat .norma/config.json

step 'git norma task add "Add a greeting" --description ... --verify ...'
task=$(git norma task add "Add a greeting" \
	--description 'Objective: greet the world with "Hello, world"
Artifact: hello.txt' \
	--verify "grep -q 'Hello, world' hello.txt")
echo "$task"
git norma task list

step "git norma run $task"
git norma run "$task"

step "git log --oneline --all --graph"
git log --oneline --all --graph
step "git show --stat main"
git show --stat main
step "git norma status"
git norma status
step "cat .norma/runs/*/artifacts/progress.md"
cat .norma/runs/*/artifacts/progress.md
step "git norma task show $task"
git norma task show "$task"

printf '\nThe repository is in %s/repo — look around with git, then delete it.\n' "$work"
