package emulator

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The main goroutine keeps the main thread (a goroutine locked to it that
// returns wedges it rather than ending it), so that every thread the test
// ends could be the one that started moto.
func init() { runtime.LockOSThread() }

// Moto outlives the threads of its binary: the kernel signals a child
// started with Pdeathsig when the thread that forked it ends, and Go ends
// a thread whenever a goroutine locked to it returns.
func TestMotoOutlivesEndedThreads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	for range 4 {
		var wg sync.WaitGroup
		for range 4 * runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				runtime.LockOSThread() // and return locked: the thread ends
				time.Sleep(time.Millisecond)
			})
		}
		wg.Wait()
	}
	time.Sleep(100 * time.Millisecond) // a signalled moto takes a moment to exit
	resp, err := http.Get(m.Endpoint + "/moto-api/data.json")
	if err != nil {
		t.Fatalf("moto stopped answering once threads of its binary ended: %v", err)
	}
	resp.Body.Close()
}
