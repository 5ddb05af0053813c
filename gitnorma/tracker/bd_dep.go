package tracker

import (
	"context"
	"encoding/json"
	"fmt"
)

// RemoveDependency runs `bd dep remove <issue> <depends-on> --json`. bd reports success even
// for an edge that does not exist, so its answer is not read: the caller looks first.
func (b *BD) RemoveDependency(ctx context.Context, issue, dependsOn string) error {
	if err := checkID(issue, dependsOn); err != nil {
		return err
	}
	if _, err := b.call(ctx, []string{"dep", "remove", issue, dependsOn, "--json"}); err != nil {
		return taskError("dependency "+issue+" → "+dependsOn, err)
	}
	return nil
}

// AddDependency runs `bd dep add <issue> <depends-on> -t <type> --json` and checks bd's
// object answer ({"status":"added",...}); a cycle or an unknown id is an error.
func (b *BD) AddDependency(ctx context.Context, issue, dependsOn, depType string) error {
	if err := checkID(issue, dependsOn); err != nil {
		return err
	}
	if !ValidDependencyType(depType) {
		return fmt.Errorf("invalid dependency type %q", depType)
	}
	res, err := b.call(ctx, []string{"dep", "add", issue, dependsOn, "-t", depType, "--json"})
	if err != nil {
		return taskError("dependency "+issue+" → "+dependsOn, err)
	}
	var out struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(res.stdout, &out) != nil || out.Status != "added" {
		if msg := jsonErrorMessage(res.stdout); msg != "" {
			return res.errorf(msg)
		}
		return res.shapeError(`want {"status":"added"}`, nil)
	}
	return nil
}
