package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSocketPath(t *testing.T) {
	for line, want := range map[string]string{
		"0000000023b3374e: 00000003 00000000 00000000 0001 03  1057":                    "",
		"000000006854046c: 00000002 00000000 00010000 0001 01 23456 /run/user/0/bus":    "/run/user/0/bus",
		"000000006854046c: 00000002 00000000 00010000 0001 01 123456789 /tmp/a  b.sock": "/tmp/a  b.sock",
		"000000006854046c: 00000002 00000000 00010000 0001 01 23456 /tmp/trailing ":     "/tmp/trailing ",
		"000000006854046c: 00000002 00000000 00010000 0001 01 23456 @/tmp/.X11-unix/X0": "",
		"000000006854046c: 00000002 00000000 00010000 0001 01 23456 rel.sock":           "",
		"Num       RefCount Protocol Flags    Type St Inode Path":                       "",
	} {
		assert.Equal(t, want, socketPath(line), line)
	}
}
