package hooks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A branch reflog entry is the task's own commit unless it records the branch moving onto a
// commit made elsewhere.
func TestMadeThere(t *testing.T) {
	for msg, want := range map[string]bool{
		"commit: a wrong attempt":                              true,
		"commit (amend): fix":                                  true,
		"commit (merge): Merge branch 'main'":                  true,
		"merge main: Merge made by the 'ort' strategy.":        true,
		"norma: catch up with main":                            true,
		"rebase (finish): refs/heads/norma/task/x onto 1234":   true,
		"cherry-pick: a fix":                                   true,
		"":                                                     true, // an update-ref without a message: not known to come from elsewhere
		"branch: Created from refs/heads/main":                 false,
		"branch: Created from HEAD":                            false,
		"branch: Reset to main":                                false,
		"reset: moving to HEAD~1":                              false,
		"merge main: Fast-forward":                             false,
		"pull: Fast-forward":                                   false,
		"fetch origin norma/task/x:norma/task/x: fast-forward": false,
		"norma: restart from main":                             false,
	} {
		assert.Equal(t, want, madeThere(msg), msg)
	}
}

// Only an orchestrator step commit (Norma-Task and Norma-Role) names its task; a landing
// commit (no Norma-Role) and a plain commit do not.
func TestStepCommitTask(t *testing.T) {
	task, role := git.Trailer{Key: "Norma-Task", Value: "norma-ab12"}, git.Trailer{Key: "Norma-Role", Value: "do"}
	assert.Equal(t, "norma-ab12", stepCommitTask([]git.Trailer{task, role}))
	assert.Equal(t, "norma-ab12", stepCommitTask([]git.Trailer{{Key: "norma-role", Value: "act"}, {Key: "norma-task", Value: "norma-ab12"}}))
	assert.Equal(t, "", stepCommitTask([]git.Trailer{task}), "a landing commit")
	assert.Equal(t, "", stepCommitTask(nil))
}

// records is the application's store as the gate sees it, for a repository whose task
// branches are real.
type records struct {
	repo *gittest.Repo
	runs map[string][]Run
	err  error
}

func (r records) TaskBranches(ctx context.Context) ([]Branch, error) {
	out := r.repo.Must("for-each-ref", "--format=%(refname:lstrip=4) %(objectname)", "refs/heads/norma/task/")
	var bs []Branch
	for _, line := range strings.Split(out, "\n") {
		if task, head, ok := strings.Cut(line, " "); ok {
			bs = append(bs, Branch{Task: task, Head: head})
		}
	}
	return bs, nil
}

func (r records) Runs(ctx context.Context, task string) ([]Run, error) { return r.runs[task], r.err }

// The gate finds a task's work among new commits (made on its branch, or a step commit named
// by its trailers), lets through what a PASS covers and your own commits, and says why the
// rest is refused.
func TestGateRefusesTaskWorkNoPassCovers(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	base := repo.Must("rev-parse", "HEAD")
	mine := repo.Commit("mine, on main")
	repo.Must("switch", "-q", "-c", "norma/task/t-1", base)
	first := repo.Commit("a hand-made commit on the task branch")
	repo.Must("commit", "-q", "--allow-empty", "-m", "step\n\nNorma-Task: t-1\nNorma-Role: do")
	second := repo.Must("rev-parse", "HEAD")
	g := Gate{Git: repo.Git, BranchPrefix: "norma/task/", Records: records{repo: repo, runs: map[string][]Run{
		"t-1": {{ID: "r-2", Verdict: "FAIL", Head: second}, {ID: "r-1", Verdict: "PASS", Passed: true, Head: first, PassHead: first}},
	}}}

	refused, err := g.Refused(ctx, []string{second}, []string{base})
	require.NoError(t, err)
	require.Len(t, refused, 1)
	assert.Contains(t, refused[0], "norma/task/t-1 at "+second[:10]+" has no recorded PASS (last verdict FAIL (run r-2))")

	refused, err = g.Refused(ctx, []string{first}, []string{base})
	require.NoError(t, err)
	assert.Empty(t, refused, "the PASS of r-1 covers the first commit")

	refused, err = g.Refused(ctx, []string{mine}, []string{base})
	require.NoError(t, err)
	assert.Empty(t, refused, "a commit of yours is not task work")

	// a task branch made from your commit: not its work, until a commit is made on it
	repo.Must("branch", "norma/task/t-2", mine)
	refused, err = g.Refused(ctx, []string{mine}, []string{base})
	require.NoError(t, err)
	assert.Empty(t, refused, "a task branch's fork point is not its work")
	repo.Must("tag", "norma/task/t-2") // git's short name for the branch is now heads/norma/task/t-2
	refused, err = g.Refused(ctx, []string{mine}, []string{base})
	require.NoError(t, err)
	assert.Empty(t, refused, "the branch's reflog is read under a tag of the same name")
	repo.Must("switch", "-q", "norma/task/t-2")
	hand := repo.Commit("by hand on t-2")
	refused, err = g.Refused(ctx, []string{hand}, []string{base})
	require.NoError(t, err)
	assert.Equal(t, []string{"norma/task/t-2 at " + hand[:10] + " has no recorded PASS (never checked)"}, refused)

	assert.Equal(t, "", g.Unverified(ctx, "t-1", first))
	assert.Contains(t, g.Unverified(ctx, "t-1", second), "last verdict FAIL (run r-2)")

	g.Records = records{repo: repo, err: errors.New("no run is recorded here")}
	refused, err = g.Refused(ctx, []string{second}, []string{base})
	require.NoError(t, err)
	require.Len(t, refused, 1)
	assert.Contains(t, refused[0], "(no run is recorded here)")
}

// A hook invocation becomes its event: the pre-push stdin's updates and the remote, the
// commits a merge brings in, the post-commit's wait.
func TestDispatchDecodesEachHook(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	h := &recorder{}
	stdin := strings.NewReader("refs/heads/main 1111111111111111111111111111111111111111 refs/heads/main 0000000000000000000000000000000000000000\n")
	require.NoError(t, Dispatch(ctx, Invocation{Name: "pre-push", Args: []string{"origin", "url"}, Stdin: stdin, Git: repo.Git}, h))
	assert.Equal(t, "origin", h.remote)
	assert.Equal(t, []PushUpdate{{LocalRef: "refs/heads/main", LocalID: strings.Repeat("1", 40), RemoteRef: "refs/heads/main", RemoteID: strings.Repeat("0", 40)}}, h.updates)

	require.NoError(t, Dispatch(ctx, Invocation{Name: "pre-merge-commit", Env: []string{"GITHEAD_abc=topic", "HOME=/x"}, Git: repo.Git}, h))
	assert.Equal(t, []string{"abc"}, h.merged)
	assert.Equal(t, "merge", h.concluding, "git merge --no-verify gets it through")
	h.merged = nil
	require.NoError(t, Dispatch(ctx, Invocation{Name: "pre-commit", Git: repo.Git}, h))
	assert.Nil(t, h.merged, "a plain commit merges nothing")

	require.NoError(t, Dispatch(ctx, Invocation{Name: "post-commit", Env: []string{WaitEnv + "=1"}, Git: repo.Git}, h))
	assert.True(t, h.waited)

	err := Dispatch(ctx, Invocation{Name: "pre-push", Stdin: strings.NewReader("garbage\n"), Git: repo.Git}, h)
	assert.ErrorContains(t, err, `pre-push: unexpected line "garbage"`)
}

type recorder struct {
	waited     bool
	merged     []string
	concluding string
	remote     string
	updates    []PushUpdate
}

func (r *recorder) Committed(_ context.Context, wait bool) error { r.waited = wait; return nil }
func (r *recorder) Merging(_ context.Context, merged []string, concluding string) error {
	r.merged, r.concluding = merged, concluding
	return nil
}
func (r *recorder) Pushing(_ context.Context, remote string, updates []PushUpdate) error {
	r.remote, r.updates = remote, updates
	return nil
}

// A push to a URL is a push to the remote configured with it, by url or pushurl, as the
// configuration spells it or as git rewrites it (url.<base>.insteadOf, pushInsteadOf); a push
// to a remote by name keeps its name.
func TestRemoteWithURL(t *testing.T) {
	ctx := context.Background()
	r := gittest.NewRepo(t)
	r.Must("remote", "add", "my.fork", "../fork.git")
	r.Must("config", "remote.my.fork.pushurl", "git@host:me/fork.git")
	assert.Equal(t, "my.fork", remoteWithURL(ctx, r.Git, "../fork.git", "../fork.git"))
	assert.Equal(t, "my.fork", remoteWithURL(ctx, r.Git, "git@host:me/fork.git", "git@host:me/fork.git"))
	assert.Equal(t, "", remoteWithURL(ctx, r.Git, "../other.git", "../other.git"))
	assert.Equal(t, "", remoteWithURL(ctx, r.Git, "my.fork", "../fork.git"), "named")

	r.Must("remote", "add", "up", "gh:team/repo.git")
	r.Must("config", "url.https://host/.insteadOf", "gh:")
	r.Must("config", "url.ssh://host/.pushInsteadOf", "ghp:")
	assert.Equal(t, "up", remoteWithURL(ctx, r.Git, "https://host/team/repo.git", "https://host/team/repo.git"))
	assert.Equal(t, "up", remoteWithURL(ctx, r.Git, "gh:team/repo.git", "https://host/team/repo.git"))
	r.Must("remote", "set-url", "up", "ghp:team/repo.git")
	assert.Equal(t, "up", remoteWithURL(ctx, r.Git, "ssh://host/team/repo.git", "ssh://host/team/repo.git"))
	assert.Equal(t, "", remoteWithURL(ctx, r.Git, "https://host/other.git", "https://host/other.git"))
}
