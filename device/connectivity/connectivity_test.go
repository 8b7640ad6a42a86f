package connectivity

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestCheckInternet(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer bad.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()

	tests := []struct {
		name    string
		urls    []string
		want    bool
		wantErr bool
		noURLs  bool
	}{
		{name: "no urls", urls: nil, want: false, wantErr: true, noURLs: true},
		{name: "204", urls: []string{ok.URL}, want: true},
		{name: "503", urls: []string{bad.URL}, want: false, wantErr: true},
		{name: "refused", urls: []string{goneURL}, want: false, wantErr: true},
		{name: "first fails second answers", urls: []string{goneURL, bad.URL, ok.URL}, want: true},
		{name: "malformed url", urls: []string{"::nope"}, want: false, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			got, err := CheckInternet(ctx, tc.urls, &http.Client{Timeout: 2 * time.Second})
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("CheckInternet = %v, %v; want %v, err %v", got, err, tc.want, tc.wantErr)
			}
			if tc.noURLs && !errors.Is(err, ErrNoCheckURLs) {
				t.Fatalf("err = %v, want ErrNoCheckURLs", err)
			}
		})
	}
}

func TestNetworkUp(t *testing.T) {
	lo := Interface{Name: "lo", Up: true, Loopback: true, Addrs: []string{"127.0.0.1/8", "::1/128"}}
	tests := []struct {
		name string
		ifs  []Interface
		want bool
	}{
		{name: "none", ifs: nil, want: false},
		{name: "loopback only", ifs: []Interface{lo}, want: false},
		{name: "eth down", ifs: []Interface{lo, {Name: "eth0", Up: false, Addrs: []string{"192.168.1.2/24"}}}, want: false},
		{name: "eth up no addr", ifs: []Interface{lo, {Name: "eth0", Up: true}}, want: false},
		{name: "eth up link-local v6 only", ifs: []Interface{{Name: "eth0", Up: true, Addrs: []string{"fe80::1/64"}}}, want: false},
		{name: "wlan up v4", ifs: []Interface{lo, {Name: "wlan0", Up: true, Addrs: []string{"10.0.0.7/24"}}}, want: true},
		{name: "eth up global v6", ifs: []Interface{{Name: "eth0", Up: true, Addrs: []string{"2001:db8::5/64"}}}, want: true},
		{name: "garbage addr", ifs: []Interface{{Name: "eth0", Up: true, Addrs: []string{"nope"}}}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := NetworkUp(tc.ifs); got != tc.want {
				t.Fatalf("NetworkUp = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

// ticks is a fake clock: After(d) returns the channel for d, which the test
// fires to run the next check of the monitor using that interval.
type ticks struct {
	mu sync.Mutex
	ch map[time.Duration]chan time.Time
}

func (k *ticks) after(d time.Duration) <-chan time.Time { return k.get(d) }

func (k *ticks) get(d time.Duration) chan time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ch == nil {
		k.ch = map[time.Duration]chan time.Time{}
	}
	if k.ch[d] == nil {
		k.ch[d] = make(chan time.Time)
	}
	return k.ch[d]
}

func (k *ticks) fire(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case k.get(d) <- time.Now():
	case <-time.After(5 * time.Second):
		t.Fatalf("monitor with interval %s never waited", d)
	}
}

type events struct {
	mu  sync.Mutex
	got []string
	c   chan string
}

func newEvents() *events { return &events{c: make(chan string, 64)} }

func (e *events) emit(ev string, _ map[string]any) { e.c <- ev }

func (e *events) next(t *testing.T) string {
	t.Helper()
	select {
	case ev := <-e.c:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return ""
	}
}

func (e *events) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-e.c:
		t.Fatalf("unexpected event %s", ev)
	default:
	}
}

func TestNetworkMonitor(t *testing.T) {
	up := []Interface{{Name: "eth0", Up: true, Addrs: []string{"10.1.1.1/24"}}}
	down := []Interface{{Name: "lo", Up: true, Loopback: true, Addrs: []string{"127.0.0.1/8"}}}
	var mu sync.Mutex
	cur := down
	setIfs := func(v []Interface) { mu.Lock(); cur = v; mu.Unlock() }
	k := &ticks{}
	ev := newEvents()
	m, err := New(Config{
		Emit:            ev.emit,
		Interfaces:      func() ([]Interface, error) { mu.Lock(); defer mu.Unlock(); return cur, nil },
		NetworkInterval: time.Second,
		After:           k.after,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	// The first observation is "down": nothing is said. The tick proves the
	// check ran (the loop waits again only after it).
	k.fire(t, time.Second)
	ev.none(t)
	setIfs(up)
	k.fire(t, time.Second)
	if got := ev.next(t); got != NetworkConnected {
		t.Fatalf("got %s, want %s", got, NetworkConnected)
	}
	k.fire(t, time.Second) // unchanged: silent
	ev.none(t)
	setIfs(down)
	k.fire(t, time.Second)
	if got := ev.next(t); got != NetworkDisconnected {
		t.Fatalf("got %s, want %s", got, NetworkDisconnected)
	}
	if s := m.State(); s.Network || s.InternetReason != ErrNoCheckURLs.Error() {
		t.Fatalf("state = %+v", s)
	}
	if err := m.Start(context.Background()); err == nil {
		t.Fatal("second Start succeeded")
	}
}

func TestInternetMonitor(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
	}))
	defer srv.Close()
	setStatus := func(s int) { mu.Lock(); status = s; mu.Unlock() }
	k := &ticks{}
	ev := newEvents()
	m, err := New(Config{
		Emit:            ev.emit,
		Interfaces:      func() ([]Interface, error) { return nil, nil },
		NetworkInterval: time.Hour,
		CheckURLs:       []string{srv.URL},
		Interval:        time.Minute,
		After:           k.after,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := ev.next(t); got != InternetConnected {
		t.Fatalf("got %s, want %s", got, InternetConnected)
	}
	setStatus(http.StatusBadGateway)
	k.fire(t, time.Minute)
	if got := ev.next(t); got != InternetDisconnected {
		t.Fatalf("got %s, want %s", got, InternetDisconnected)
	}
	if s := m.State(); s.Internet || s.InternetReason == "" {
		t.Fatalf("state = %+v", s)
	}
	setStatus(http.StatusOK)
	k.fire(t, time.Minute)
	if got := ev.next(t); got != InternetConnected {
		t.Fatalf("got %s, want %s", got, InternetConnected)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	_ = m.Close() // idempotent
}

func TestNewRequiresEmit(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without Emit succeeded")
	}
}
