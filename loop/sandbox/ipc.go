package sandbox

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// A serving launcher's commands share its IPC namespace, as they share its pid namespace:
// SysV objects outlive the processes that made them, and an agent's would be there for the
// check commands that judge its work, state outside the tree that lands. removeIPC removes
// them after each command, as the kill removes its processes. (The user's own objects are in
// another namespace: the launcher cannot see them.)

// ipcObjects are /proc/sysvipc's lists and the syscall that removes an object of each.
var ipcObjects = []struct {
	list   string
	remove uintptr
}{
	{"/proc/sysvipc/shm", syscall.SYS_SHMCTL},
	{"/proc/sysvipc/sem", syscall.SYS_SEMCTL},
	{"/proc/sysvipc/msg", syscall.SYS_MSGCTL},
}

// ipcRmid is IPC_RMID (linux/ipc.h).
const ipcRmid = 0

// removeIPC removes every SysV shared memory segment, semaphore set and message queue of the
// launcher's IPC namespace.
func removeIPC() {
	for _, o := range ipcObjects {
		for _, id := range ipcIDs(o.list) {
			if o.remove == syscall.SYS_SEMCTL {
				_, _, _ = syscall.RawSyscall6(o.remove, uintptr(id), 0, ipcRmid, 0, 0, 0)
			} else {
				_, _, _ = syscall.RawSyscall(o.remove, uintptr(id), ipcRmid, 0)
			}
		}
	}
}

// ipcIDs are the ids (second column) a /proc/sysvipc list names under its header line.
func ipcIDs(list string) []int {
	f, err := os.Open(list)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ids []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		if f := strings.Fields(s.Text()); len(f) > 1 {
			if id, err := strconv.Atoi(f[1]); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids
}
