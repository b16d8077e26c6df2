package notify_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
)

// BenchmarkRoundTrip is the cost of one notified call that the supervisor
// continues: the target's call, the receive, the answer, the call itself.
func BenchmarkRoundTrip(b *testing.B) {
	tg := startTarget(b, unix.SYS_GETPPID)
	go func() {
		for {
			n, err := tg.listener.Receive()
			if err != nil {
				return
			}
			tg.listener.Respond(notify.Response{ID: n.ID, Continue: true})
		}
	}()
	for b.Loop() {
		if r := <-tg.start(unix.SYS_GETPPID); r.errno != 0 {
			b.Fatalf("getppid: errno %d", r.errno)
		}
	}
}
