//go:build !chorus_agent

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/localauth"
	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// chromiumPath finds Debian's chromium (scripts/test.sh installs it); the
// browser tests skip without it outside CI and fail in CI.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium missing in CI: scripts/test.sh installs it (apt-get install chromium)")
	}
	t.Skip("chromium not installed (apt-get install chromium): the dashboard's browser tests need it")
	return ""
}

// browser is a headless chromium driven over the DevTools protocol.
type browser struct {
	t   *testing.T
	ctx context.Context
	// shots, when set (CHORUS_DASHBOARD_SHOTS), receives the pages the
	// documentation shows (docs/dashboard.md).
	shots string
}

// startBrowser starts chromium in the background and returns a function
// that waits until it is up and returns it: chromium takes seconds to start
// (2.5-5 s on a loaded 2-core machine), time the test spends starting its
// gateway and agents meanwhile. The wait is on the test's goroutine (it
// may fail t).
func startBrowser(t *testing.T) func() *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	// The whole browser lives at most 6 minutes: a hung chromium ends the test.
	life, cancelLife := context.WithTimeout(context.Background(), 6*time.Minute)
	actx, cancelAlloc := chromedp.NewExecAllocator(life, opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc(); cancelLife() })
	started := make(chan error, 1) // buffered: a test that failed meanwhile never receives
	go func() {
		started <- chromedp.Do(ctx) // starts the browser; no timeout on this first call (chromedp.Run)
	}()
	return func() *browser {
		t.Helper()
		if err := <-started; err != nil {
			t.Fatalf("start chromium: %v", err)
		}
		return newBrowser(t, ctx)
	}
}

// newBrowser drives the started browser of ctx.
func newBrowser(t *testing.T, ctx context.Context) *browser {
	t.Helper()
	// Confirmation dialogs (abort, remove) are accepted, as an operator would.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	b := &browser{t: t, ctx: ctx, shots: os.Getenv("CHORUS_DASHBOARD_SHOTS")}
	t.Cleanup(func() {
		if t.Failed() {
			b.failureShot()
		}
	})
	return b
}

// bounded is the browser's context with a deadline for one step.
func (b *browser) bounded(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, d)
}

// do runs steps within a minute; a failure fails t (the cleanup saves a
// screenshot of the page).
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := b.bounded(time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// get runs one action that returns a value.
func get[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := b.bounded(time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// failureShot saves the page the test failed on where it outlives the test.
func (b *browser) failureShot() {
	ctx, cancel := b.bounded(10 * time.Second)
	defer cancel()
	url, _ := chromedp.Run(ctx, chromedp.Location())
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	dir := filepath.Join(os.TempDir(), "chorus-dashboard-failures")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, strings.ReplaceAll(b.t.Name(), "/", "_")+".png")
	if err := os.WriteFile(path, png, 0o644); err == nil {
		b.t.Logf("failure screenshot of %s: %s", url, path)
	}
}

// shot saves the page for the documentation when asked to.
func (b *browser) shot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	png := get(b, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// waitJS polls a JavaScript expression until it is true.
func (b *browser) waitJS(what, expr string, within time.Duration) {
	b.t.Helper()
	ctx, cancel := b.bounded(within + 10*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(within), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// click clicks the first element that matches selector once it is there
// (waiting up to within). The click runs in a task of the page of its own,
// which looks the element up again: a live section (data-live) the page
// swaps between chromedp's finding a node and clicking it failed the test
// with "Could not find node with given id", and a confirmation dialog the
// click opens must not block the evaluation that scheduled it.
func (b *browser) click(what, selector string, within time.Duration) {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	b.waitJS(what, fmt.Sprintf(`(() => { const sel = %s; if (!document.querySelector(sel)) return false;
		setTimeout(() => document.querySelector(sel).click(), 0); return true; })()`, sel), within)
}

// fetchStatus runs a fetch in the page (its cookies, its origin) and
// returns the status.
func (b *browser) fetchStatus(what, js string) int {
	b.t.Helper()
	return get(b, what, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
}

// The browser scenario: a real gateway with real agents, the
// dashboard in headless chromium.
func TestDashboardBrowserE2E(t *testing.T) {
	t.Parallel()
	browserUp := startBrowser(t)
	work := t.TempDir()
	gw := filepath.Join(work, "gateway")
	g := startChorus(t, work, "gateway", "--data-dir", gw, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	up := waitUp(t, g, gw)
	token, err := os.ReadFile(filepath.Join(gw, localauth.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	// The gateway says where the dashboard is.
	if err := poll.Wait(context.Background(), "the gateway printing the dashboard's URL", 10*time.Second, func() bool {
		return strings.Contains(g.out.String(), "dashboard  "+up.HTTPURL+"/")
	}); err != nil {
		t.Fatalf("%v:\n%s", err, g.out.String())
	}
	fleetArgs := func(args ...string) []string { return append(args, "--data-dir", gw) }
	devices := []string{"pi-1", "pi-2", "pi-3"}
	agents := map[string]*proc{}
	// A killed agent shows offline once its Will is published, will_delay
	// after the broker saw the connection drop: 1 s here (agent.will_delay,
	// its minimum; 5 s by default).
	agentConfig := filepath.Join(work, "agent.json")
	writeFile(t, agentConfig, `{"agent": {"will_delay": 1}}`)
	for _, d := range devices {
		creds := filepath.Join(work, d+".json")
		mustChorus(t, work, fleetArgs("fleet", "device", "add", d, "--tag", "kitchen", "--credentials-out", creds)...)
		agents[d] = startChorus(t, work, "agent", "--config", agentConfig, "--credentials", creds, "--data-dir", filepath.Join(work, "agent-"+d),
			"--skills", t.TempDir(), "--ws-listen", "off")
	}

	b := browserUp()
	base := up.HTTPURL

	// Signed out: the pages send to the sign-in form.
	b.do("open signed out", chromedp.Navigate(base+"/devices"), chromedp.WaitVisible(chromedp.CSS(`#token`)))
	loc := get(b, "location", chromedp.Location())
	if !strings.HasSuffix(loc, "/login") {
		t.Fatalf("signed out /devices landed on %s, want /login", loc)
	}
	b.shot("login")
	b.do("wrong token", chromedp.SendKeys(chromedp.CSS(`#token`), "not-the-token"), chromedp.Submit(chromedp.CSS(`#token`)), chromedp.WaitVisible(chromedp.CSS(`#error`)))
	// With the keyboard only: the field has the focus, Enter submits.
	b.waitJS("the token field has the focus", `document.activeElement && document.activeElement.id === "token"`, 10*time.Second)
	b.do("sign in", chromedp.KeyEvent(strings.TrimSpace(string(token))+"\r"), chromedp.WaitVisible(chromedp.CSS(`#counts`)))

	// Every device with the right online state.
	b.do("devices", chromedp.Navigate(base+"/devices"), chromedp.WaitVisible(chromedp.CSS(`#devices`)))
	b.waitJS("every device online", `["pi-1","pi-2","pi-3"].every(d => { const r = document.getElementById("dev-" + d); return r && r.dataset.online === "yes"; })`, 30*time.Second)

	// Kill an agent: its row turns offline with no reload.
	get(b, "mark the page", chromedp.Evaluate[int](`window.chorusMark = 1`))
	agents["pi-3"].kill(t)
	b.waitJS("pi-3 offline, live", `document.getElementById("dev-pi-3").dataset.online === "no" && window.chorusMark === 1`, 30*time.Second)
	b.shot("devices")
	b.do("overview", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#attention`)))
	b.waitJS("pi-3 needs attention", `document.getElementById("attention").textContent.includes("pi-3")`, 10*time.Second)

	// Publish a skill by upload.
	for _, s := range []string{"fleet.hello", "fleet.bye"} {
		dir := filepath.Join(work, s)
		writeFleetSkill(t, dir, s, "1.0.0")
		f, err := os.Create(filepath.Join(work, s+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := artifact.Pack(dir, f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		b.do("upload "+s, chromedp.Navigate(base+"/skills"), chromedp.WaitVisible(chromedp.CSS(`#archive`)),
			chromedp.SetUploadFiles(chromedp.CSS(`#archive`), []string{f.Name()}), chromedp.Submit(chromedp.CSS(`#archive`)),
			chromedp.WaitVisible(chromedp.CSS(`#installs`)))
		loc = get(b, "published "+s, chromedp.Location())
		if !strings.HasSuffix(loc, "/skills/"+s) {
			t.Fatalf("after the upload of %s: at %s", s, loc)
		}
	}
	b.do("search with a typo", chromedp.Navigate(base+"/skills?q=fleet.helo"), chromedp.WaitVisible(chromedp.CSS(`#did-you-mean`)))
	dym := get(b, "did you mean", chromedp.Text(chromedp.CSS(`#did-you-mean`)))
	if !strings.Contains(dym, "fleet.hello") {
		t.Fatalf("search fleet.helo: %q, want a did-you-mean naming fleet.hello", dym)
	}
	b.shot("skills")

	// A canary rollout from the form; its progress bar reaches success.
	b.do("new rollout", chromedp.Navigate(base+"/rollouts"), chromedp.WaitVisible(chromedp.CSS(`#rollout-form`)),
		chromedp.SendKeys(chromedp.CSS(`#skill`), "fleet.hello"),
		chromedp.Click(chromedp.CSS(`input[name=target][value=devices]`)),
		chromedp.SendKeys(chromedp.CSS(`#targets`), "pi-1 pi-2"),
		chromedp.SendKeys(chromedp.CSS(`#canary`), "1"),
		chromedp.SendKeys(chromedp.CSS(`#timeout`), "90s"),
		chromedp.Submit(chromedp.CSS(`#skill`)), chromedp.WaitVisible(chromedp.CSS(`#rollout-state`)))
	b.waitJS("canary rollout succeeded", `document.getElementById("rollout-state").textContent === "succeeded" &&
		(() => { const p = document.querySelector("#summary progress"); return p && p.value === p.max && p.max === 2; })()`, 90*time.Second)
	b.shot("rollout")

	// Pause and resume a rollout that waits on the offline pi-3, then abort
	// it with rollback: fleet.bye leaves pi-1 and pi-2 again.
	b.do("second rollout", chromedp.Navigate(base+"/rollouts"), chromedp.WaitVisible(chromedp.CSS(`#rollout-form`)),
		chromedp.SendKeys(chromedp.CSS(`#skill`), "fleet.bye"), chromedp.SendKeys(chromedp.CSS(`#targets`), "kitchen"),
		chromedp.Submit(chromedp.CSS(`#skill`)), chromedp.WaitVisible(chromedp.CSS(`#rollout-state`)))
	b.waitJS("two of three succeeded", `document.querySelector("#summary .progress-text").textContent.startsWith("2/3 succeeded")`, 90*time.Second)
	b.waitJS("pi-3's reason", `document.querySelector('#executions tr[data-device="pi-3"]').textContent.includes("offline since")`, 10*time.Second)
	b.click("pause", `#pause`, 10*time.Second)
	b.do("paused page", chromedp.WaitVisible(chromedp.CSS(`#resume`)))
	b.waitJS("paused", `document.getElementById("rollout-state").textContent === "paused"`, 10*time.Second)
	b.click("resume", `#resume`, 10*time.Second)
	b.do("resumed page", chromedp.WaitVisible(chromedp.CSS(`#pause`)))
	b.waitJS("resumed", `document.getElementById("rollout-state").textContent === "in_progress"`, 10*time.Second)
	// Ticked and clicked in one task of the page: live updates re-render the
	// actions between two separate clicks (the node is gone, or the tick lost).
	get(b, "abort with rollback", chromedp.Evaluate[int](`setTimeout(() => { document.getElementById("rollback").checked = true; document.getElementById("abort").click(); }, 0); 1`))
	b.do("abort sent", chromedp.WaitNotPresent(chromedp.CSS(`#abort`)))
	b.waitJS("aborted", `document.getElementById("rollout-state").textContent === "aborted"`, 10*time.Second)
	b.do("skill page", chromedp.Navigate(base+"/skills/fleet.bye"), chromedp.WaitVisible(chromedp.CSS(`#installs`)))
	b.waitJS("rolled back from every device", `document.getElementById("installs").textContent.includes("No device reports it.")`, 60*time.Second)

	// "Update all" installs fleet.hello where it is missing: only on pi-3,
	// which waits offline; the devices already current are skipped.
	b.do("update all", chromedp.Navigate(base+"/skills/fleet.hello"), chromedp.WaitVisible(chromedp.CSS(`#update-all`)))
	b.click("click update all", `#update-all`, 10*time.Second)
	b.do("update all sent", chromedp.WaitVisible(chromedp.CSS(`#rollout-state`)))
	b.waitJS("update all targets pi-3 only", `(() => { const rows = [...document.querySelectorAll("#executions tr[data-device]")];
		return rows.length === 1 && rows[0].dataset.device === "pi-3" && rows[0].textContent.includes("offline since"); })()`, 10*time.Second)
	b.shot("rollout-waiting")
	b.click("abort update all", `#abort`, 10*time.Second)
	b.do("update all aborted", chromedp.WaitNotPresent(chromedp.CSS(`#abort`)))

	// Turn the skill off on one device from its page: a rollout to that
	// device, which succeeds when the agent has removed it.
	b.do("pi-2's page", chromedp.Navigate(base+"/devices/pi-2"), chromedp.WaitVisible(chromedp.CSS(`#skills`)))
	b.click("turn off on pi-2", `#skills button`, 10*time.Second)
	b.do("turn off sent", chromedp.WaitVisible(chromedp.CSS(`#rollout-state`)))
	b.waitJS("turned off", `document.getElementById("rollout-state").textContent === "succeeded" &&
		document.querySelector("h1").textContent.includes("uninstall fleet.hello")`, 60*time.Second)

	// The remaining pages, for the documentation.
	b.do("device page", chromedp.Navigate(base+"/devices/pi-1"), chromedp.WaitVisible(chromedp.CSS(`#skills`)))
	b.waitJS("device page shows the skill", `document.getElementById("skills").textContent.includes("fleet.hello")`, 10*time.Second)
	b.shot("device")
	b.do("skill page", chromedp.Navigate(base+"/skills/fleet.hello"), chromedp.WaitVisible(chromedp.CSS(`#installs`)))
	b.shot("skill")
	b.do("rollouts page", chromedp.Navigate(base+"/rollouts"), chromedp.WaitVisible(chromedp.CSS(`#rollouts`)))
	b.shot("rollouts")
	b.do("audit page", chromedp.Navigate(base+"/audit"), chromedp.WaitVisible(chromedp.CSS(`#entries`)))
	b.shot("audit")
	b.do("overview", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#counts`)))
	b.shot("overview")
	b.do("phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#counts`)))
	b.shot("overview-phone")
	b.do("desktop width", chromedp.EmulateViewport(1280, 900))

	// A satellite that joins with a token waits on the overview until it
	// is accepted there (issue 16), then comes online.
	joinOut, joinAll, err := chorusOut(t, work, fleetArgs("fleet", "token", "create", "--tag", "kitchen")...)
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, joinAll)
	}
	startChorus(t, work, "agent", "join", strings.TrimSpace(joinOut), "--data-dir", filepath.Join(work, "agent-pi-new"),
		"--device", "pi-new", "--skills", t.TempDir(), "--ws-listen", "off")
	poll.Until(t, "pi-new pending", 60*time.Second, func() bool {
		out, _, _ := chorusOut(t, work, fleetArgs("fleet", "device", "pending")...)
		return strings.Contains(out, "pi-new")
	})
	b.do("overview with a pending enrolment", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#pending form`)))
	b.waitJS("pi-new listed", `document.getElementById("pending").textContent.includes("pi-new")`, 10*time.Second)
	b.click("accept pi-new", `#pending form[action$="/accept"] button`, 10*time.Second)
	poll.Until(t, "pi-new online", 60*time.Second, func() bool {
		out, _, err := chorusOut(t, work, fleetArgs("fleet", "device", "show", "pi-new", "-o", "json")...)
		var d api.DeviceResponse
		return err == nil && json.Unmarshal([]byte(out), &d) == nil && d.Device.Online
	})
	b.do("overview after accept", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#counts`)))

	// A state-changing request without the CSRF token is refused, though
	// the browser sends the session cookie.
	if st := b.fetchStatus("POST without CSRF", `fetch("/rollouts/1/pause", {method: "POST"}).then(r => r.status)`); st != http.StatusForbidden {
		t.Fatalf("POST without a CSRF token: %d, want 403", st)
	}
	// Signed out (a client without the cookie): refused, and the API's
	// bearer token still works.
	resp, err := http.Post(base+"/rollouts/1/pause", "application/x-www-form-urlencoded", strings.NewReader("csrf=x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("signed-out POST: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/devices", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bearer GET /v1/devices: %d", resp.StatusCode)
	}

	// Signing out ends the session: the browser's next POST with the old
	// CSRF token is refused as signed out.
	csrf := get(b, "csrf value", chromedp.Value(chromedp.CSS(`input[name=csrf]`)))
	b.do("sign out", chromedp.Click(chromedp.CSS(`header button.link`)), chromedp.WaitVisible(chromedp.CSS(`#token`)))
	js := fmt.Sprintf(`fetch("/rollouts/1/pause", {method: "POST", headers: {"X-CSRF-Token": %q}}).then(r => r.status)`, csrf)
	if st := b.fetchStatus("POST after sign-out", js); st != http.StatusUnauthorized {
		t.Fatalf("POST after sign-out: %d, want 401", st)
	}
}
