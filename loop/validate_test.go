package loop

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateOutput(t *testing.T) {
	withPlan := func(mut func(p *Plan)) Output {
		out := planWith("go test ./...")
		mut(out.Plan)
		return out
	}
	tests := []struct {
		name    string
		role    Role
		out     Output
		wantErr string // substring of the contract_violation message; "" means valid
		check   func(t *testing.T, out Output)
	}{
		// Common envelope.
		{name: "missing status", role: RoleDo, out: Output{Do: &Do{}}, wantErr: "status must be ok, stop or error"},
		{name: "bad status", role: RoleDo, out: Output{Status: "done", Do: &Do{}}, wantErr: `got "done"`},
		{name: "status is case-sensitive", role: RoleDo, out: Output{Status: "OK", Do: &Do{}}, wantErr: "status must be"},
		{name: "stop without stop_reason", role: RoleDo, out: Output{Status: StatusStop}, wantErr: "stop_reason"},
		{name: "stop with stop_reason none", role: RoleDo, out: Output{Status: StatusStop, StopReason: StopNone}, wantErr: `stop_reason "none"`},
		{name: "stop with unknown stop_reason", role: RoleAct, out: Output{Status: StatusStop, StopReason: "tired"}, wantErr: `stop_reason "tired"`},
		{name: "stop with interrupted is not an agent reason", role: RolePlan, out: Output{Status: StatusStop, StopReason: StopInterrupted}, wantErr: "stop_reason"},
		{name: "stop with an allowed reason needs no role section", role: RolePlan, out: Output{Status: StatusStop, StopReason: StopDependencyBlocked},
			check: func(t *testing.T, out Output) {
				assert.Nil(t, out.Plan)
				assert.Equal(t, StopDependencyBlocked, out.StopReason)
			}},
		{name: "ok cannot carry a stop reason", role: RoleDo, out: Output{Status: StatusOK, StopReason: "bogus", Do: &Do{}}, wantErr: `cannot carry stop_reason "bogus"`},
		{name: "error needs no role section and gets stop_reason none", role: RoleCheck, out: Output{Status: StatusError},
			check: func(t *testing.T, out Output) { assert.Equal(t, StopNone, out.StopReason) }},

		// Plan.
		{name: "plan: missing plan section", role: RolePlan, out: Output{Status: StatusOK}, wantErr: `needs a "plan" object`},
		{name: "plan: valid, defaults filled", role: RolePlan, out: withPlan(func(p *Plan) { p.TaskID = "" }),
			check: func(t *testing.T, out Output) {
				assert.Equal(t, StopNone, out.StopReason, "stop_reason defaults to none")
				assert.Equal(t, testTaskID, out.Plan.TaskID, "plan.task_id defaults to the task")
				assert.Equal(t, []int{0}, out.Plan.AcceptanceCriteria.Effective[0].Checks[0].ExpectExitCodes, "expect_exit_codes defaults to [0]")
			}},
		{name: "plan: explicit exit codes kept", role: RolePlan,
			out: withPlan(func(p *Plan) { p.AcceptanceCriteria.Effective[0].Checks[0].ExpectExitCodes = []int{0, 3} }),
			check: func(t *testing.T, out Output) {
				assert.Equal(t, []int{0, 3}, out.Plan.AcceptanceCriteria.Effective[0].Checks[0].ExpectExitCodes)
			}},
		{name: "plan: other task", role: RolePlan, out: withPlan(func(p *Plan) { p.TaskID = "norma-other" }), wantErr: `plan.task_id is "norma-other"`},
		{name: "plan: empty effective list", role: RolePlan, out: withPlan(func(p *Plan) { p.AcceptanceCriteria.Effective = nil }), wantErr: "effective is empty"},
		{name: "plan: duplicate AC id", role: RolePlan, out: withPlan(func(p *Plan) {
			p.AcceptanceCriteria.Effective = append(p.AcceptanceCriteria.Effective, p.AcceptanceCriteria.Effective[0])
		}), wantErr: `duplicate id "AC-1"`},
		{name: "plan: empty AC id", role: RolePlan, out: withPlan(func(p *Plan) { p.AcceptanceCriteria.Effective[0].ID = "" }), wantErr: "empty or duplicate id"},
		{name: "plan: check without cmd", role: RolePlan, out: withPlan(func(p *Plan) { p.AcceptanceCriteria.Effective[0].Checks[0].Cmd = "" }), wantErr: "needs an id and a cmd"},
		{name: "plan: check without id", role: RolePlan, out: withPlan(func(p *Plan) { p.AcceptanceCriteria.Effective[0].Checks[0].ID = "" }), wantErr: "needs an id and a cmd"},
		{name: "plan: AC without checks passes validation (the engine stops verify_missing)", role: RolePlan,
			out: withPlan(func(p *Plan) { p.AcceptanceCriteria.Effective[0].Checks = nil }),
			check: func(t *testing.T, out Output) {
				assert.Equal(t, []string{"AC-1"}, MissingChecks(out.Plan.AcceptanceCriteria.Effective))
			}},
		{name: "plan: empty do_steps", role: RolePlan, out: withPlan(func(p *Plan) { p.WorkPlan.DoSteps = nil }), wantErr: "do_steps is empty"},
		{name: "plan: duplicate do step id", role: RolePlan, out: withPlan(func(p *Plan) {
			p.WorkPlan.DoSteps = append(p.WorkPlan.DoSteps, DoStep{ID: "DO-1"})
		}), wantErr: `duplicate id "DO-1"`},
		{name: "plan: empty do step id", role: RolePlan, out: withPlan(func(p *Plan) { p.WorkPlan.DoSteps[0].ID = "" }), wantErr: "empty or duplicate id"},

		// Do.
		{name: "do: missing do section", role: RoleDo, out: Output{Status: StatusOK}, wantErr: `needs a "do" object`},
		{name: "do: valid", role: RoleDo, out: doneAll(), check: func(t *testing.T, out Output) { assert.Equal(t, StopNone, out.StopReason) }},

		// Check.
		{name: "check: missing check section", role: RoleCheck, out: Output{Status: StatusOK}, wantErr: `needs a "check" object`},
		{name: "check: missing verdict", role: RoleCheck, out: checkClaim(""), wantErr: "PASS, FAIL or PARTIAL"},
		{name: "check: bad verdict", role: RoleCheck, out: checkClaim("pass"), wantErr: `got "pass"`},
		{name: "check: valid PARTIAL", role: RoleCheck, out: checkClaim(VerdictPartial)},

		// Act.
		{name: "act: missing act section", role: RoleAct, out: Output{Status: StatusOK}, wantErr: `needs an "act" object`},
		{name: "act: bad decision", role: RoleAct, out: actDecide("merge"), wantErr: `got "merge"`},
		{name: "act: valid close", role: RoleAct, out: actDecide(DecisionClose)},
		{name: "act: valid rollback keeps stop_reason", role: RoleAct,
			out:   func() Output { o := actDecide(DecisionRollback); o.StopReason = StopNone; return o }(),
			check: func(t *testing.T, out Output) { assert.Equal(t, StopNone, out.StopReason) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			err := ValidateOutput(tc.role, testTaskID, &out)
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				var pe *ProtocolError
				require.True(t, errors.As(err, &pe), "want *ProtocolError, got %T", err)
				assert.Equal(t, ErrKindContract, pe.Kind)
				assert.Contains(t, pe.Msg, tc.wantErr)
				assert.True(t, IsProtocolError(err))
			}
			if tc.check != nil {
				tc.check(t, out)
			}
		})
	}
}

func TestProtocolErrorString(t *testing.T) {
	err := protocolErrorf(ErrKindTimeout, "after %s", "2s")
	assert.EqualError(t, err, "timeout: after 2s")
	assert.True(t, IsProtocolError(err))
	assert.False(t, IsProtocolError(errors.New("disk full")))
	assert.False(t, IsProtocolError(nil))
}
