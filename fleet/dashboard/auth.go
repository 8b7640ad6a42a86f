package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/fleet/api"
)

const (
	cookieName = "chorus_session"
	// sessionIdle ends a session unused this long; sessionMax any session.
	sessionIdle = 12 * time.Hour
	sessionMax  = 7 * 24 * time.Hour
	// maxSessions bounds the table: a new sign-in past it ends the oldest.
	maxSessions = 256
	csrfField   = "csrf"
	csrfHeader  = "X-CSRF-Token"
	// maxFormBody caps a form other than the skill upload.
	maxFormBody = 64 << 10
)

// session is one signed-in browser. Its id is the cookie's value; csrf is
// the token every state-changing request must carry (a form field or the
// X-CSRF-Token header): a page of another origin cannot read it.
type session struct {
	id       string
	csrf     string
	created  time.Time
	lastUsed time.Time
}

// sessions is the table of signed-in browsers, in memory: a restarted
// gateway asks everyone to sign in again.
type sessions struct {
	token string
	now   func() time.Time

	mu   sync.Mutex // guards byID
	byID map[string]*session
}

func newSessions(token string, now func() time.Time) *sessions {
	return &sessions{token: token, now: now, byID: map[string]*session{}}
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return base64.RawURLEncoding.EncodeToString(b)
}

// signIn checks the operator token (constant time) and opens a session.
func (s *sessions) signIn(token string) (*session, bool) {
	if s.token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
		return nil, false
	}
	now := s.now()
	ss := &session{id: randomToken(), csrf: randomToken(), created: now, lastUsed: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) >= maxSessions {
		var oldest *session
		for _, x := range s.byID {
			if oldest == nil || x.lastUsed.Before(oldest.lastUsed) {
				oldest = x
			}
		}
		delete(s.byID, oldest.id)
	}
	s.byID[ss.id] = ss
	return ss, true
}

// lookup returns the live session of id and marks it used.
func (s *sessions) lookup(id string) (session, bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byID[id]
	if !ok {
		return session{}, false
	}
	if now.Sub(ss.lastUsed) > sessionIdle || now.Sub(ss.created) > sessionMax {
		delete(s.byID, id)
		return session{}, false
	}
	ss.lastUsed = now
	return *ss, true
}

func (s *sessions) signOut(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

type ctxKey struct{}

// signedIn serves h to a browser with a live session; any other is sent to
// the sign-in page (an event stream or a POST gets 401). A state-changing
// request must carry the session's CSRF token, or it is refused with 403.
func (d *Dashboard) signedIn(h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		var ss session
		ok := err == nil
		if ok {
			ss, ok = d.auth.lookup(c.Value)
		}
		if !ok {
			if r.Method == http.MethodGet && r.URL.Path != "/events" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			limit := int64(maxFormBody)
			if r.URL.Path == "/skills" {
				limit = api.MaxArchiveBody + maxFormBody // the upload
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			got := r.Header.Get(csrfHeader)
			if got == "" {
				got = r.PostFormValue(csrfField) // multipart too: ParseMultipartForm runs first
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) != 1 {
				http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
				return
			}
		}
		h(w, r, ss)
	}
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, "login", session{}, page{Title: "Sign in"})
}

// login opens a session for the operator token. The form is same-origin
// only (its Origin header, when the browser sends one, must be this host):
// that and SameSite=Strict keep another site from signing a browser in.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !sameOrigin(o, r) {
		http.Error(w, "sign-in from another origin refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	ss, ok := d.auth.signIn(r.PostFormValue("token"))
	if !ok {
		d.render(w, r, "login", session{}, page{Title: "Sign in", status: http.StatusUnauthorized, Error: "That is not the operator token. It is the file operator-token in the gateway's data directory."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: ss.id, Path: "/", HttpOnly: true,
		Secure: d.cfg.Secure, SameSite: http.SameSiteStrictMode, MaxAge: int(sessionMax / time.Second)})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func sameOrigin(origin string, r *http.Request) bool {
	return origin == "http://"+r.Host || origin == "https://"+r.Host
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request, ss session) {
	d.auth.signOut(ss.id)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true,
		Secure: d.cfg.Secure, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
