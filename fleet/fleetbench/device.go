package fleetbench

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/state"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Credential is one enrolled device's MQTT and HTTP login.
type Credential struct {
	Device   string
	Password string
}

// device is one simulated satellite: a real MQTT 5 connection with the
// device's own credentials, the agent's retained state topics and a level-based
// apply of the desired document. Skill processes are simulated: a skill whose
// artifact verified is reported loaded at once.
type device struct {
	f       *Fleet
	id      string
	pass    string
	session uint64
	topics  deviceTopics
	client  *paho.Client
	closing atomic.Bool // errors after close are the close's, not trouble

	mu        sync.Mutex // guards the fields below; never held across I/O
	pending   []byte     // newest desired payload not yet applied
	queued    bool       // the device is in the work queue
	installed map[string]desired.Skill
	applied   int64
}

type deviceTopics struct{ avail, birth, conn, skills, desired string }

func newTopics(id string) (deviceTopics, error) {
	var t deviceTopics
	var err error
	for _, p := range []struct {
		dst   *string
		build func(string) (string, error)
	}{{&t.avail, topic.Availability}, {&t.birth, topic.Birth}, {&t.conn, topic.Connectivity},
		{&t.skills, topic.Skills}, {&t.desired, topic.Desired}} {
		if *p.dst, err = p.build(id); err != nil {
			return t, err
		}
	}
	return t, nil
}

// connect dials the broker and does what the agent does at every connection
// (device/agent): CONNECT with a delayed Will of `offline` carrying the birth
// session, publish birth and `online`, subscribe to desired, then publish
// connectivity and the skills report.
func (d *device) connect(ctx context.Context) error {
	conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", d.f.cfg.MQTTAddr)
	if err != nil {
		return fmt.Errorf("device %s: dial: %w", d.id, err)
	}
	d.client = paho.NewClient(paho.ClientConfig{
		Conn: conn, ClientID: d.id,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){d.received},
		OnClientError: func(error) {
			if !d.closing.Load() {
				d.f.clientErrors.Add(1)
			}
		},
		OnServerDisconnect: func(*paho.Disconnect) {
			d.f.serverDisconnects.Add(1)
		},
	})
	sess := strconv.FormatUint(d.session, 10)
	willDelay, expiry := uint32(5), uint32(60)
	cp := &paho.Connect{
		KeepAlive: 60, ClientID: d.id, CleanStart: true,
		Username: d.id, UsernameFlag: true, Password: []byte(d.pass), PasswordFlag: true,
		Properties:     &paho.ConnectProperties{SessionExpiryInterval: &expiry},
		WillMessage:    &paho.WillMessage{Topic: d.topics.avail, QoS: 1, Retain: true, Payload: []byte("offline")},
		WillProperties: &paho.WillProperties{WillDelayInterval: &willDelay, User: paho.UserProperties{{Key: "session", Value: sess}}},
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := d.client.Connect(cctx, cp); err != nil {
		_ = conn.Close()
		return fmt.Errorf("device %s: connect: %w", d.id, err)
	}
	birth, _ := state.Encode(state.Birth{Session: d.session, AgentVersion: "bench", StartedAt: time.Now().UTC().Format(time.RFC3339),
		Hostname: d.id, Arch: "sim", Isolation: "none"})
	if err := d.publish(cctx, d.topics.birth, birth); err != nil {
		return err
	}
	if err := d.publishProps(cctx, d.topics.avail, []byte("online"), paho.UserProperties{{Key: "session", Value: sess}}); err != nil {
		return err
	}
	if _, err := d.client.Subscribe(cctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: d.topics.desired, QoS: 1}}}); err != nil {
		return fmt.Errorf("device %s: subscribe desired: %w", d.id, err)
	}
	conn2, _ := state.Encode(state.Connectivity{Network: true, Internet: true, ChangedAt: time.Now().UTC(), Source: "monitor"})
	if err := d.publish(cctx, d.topics.conn, conn2); err != nil {
		return err
	}
	return d.report(cctx)
}

// received is paho's callback, on the connection's goroutine: it only keeps
// the newest desired payload and queues the device for a worker.
func (d *device) received(pr paho.PublishReceived) (bool, error) {
	if pr.Packet.Topic != d.topics.desired {
		return true, nil
	}
	p := append([]byte(nil), pr.Packet.Payload...)
	d.mu.Lock()
	d.pending = p
	enqueue := !d.queued
	d.queued = true
	d.mu.Unlock()
	if enqueue {
		d.f.work <- d
	}
	return true, nil
}

// apply reconciles the newest desired document: every skill whose artifact
// is not held yet is downloaded and verified (sha256 and size), skills no
// longer desired are dropped, and the skills report is published with the
// document's version as applied_version.
func (d *device) apply(ctx context.Context) {
	d.mu.Lock()
	payload := d.pending
	d.pending, d.queued = nil, false
	have := d.installed
	d.mu.Unlock()
	if payload == nil {
		return
	}
	if len(payload) == 0 { // cleared topic: nothing desired
		return
	}
	doc, err := desired.Parse(payload)
	if err != nil {
		d.f.applyErrors.Add(1)
		d.f.log.Warn("desired refused", "device", d.id, "error", err)
		return
	}
	next := make(map[string]desired.Skill, len(doc.Skills))
	for id, s := range doc.Skills {
		if old, ok := have[id]; ok && old.SHA256 == s.SHA256 {
			next[id] = s
			continue
		}
		if err := d.f.fetcher.fetch(ctx, d.id, d.pass, s); err != nil {
			d.f.applyErrors.Add(1)
			d.f.log.Warn("artifact", "device", d.id, "skill", id, "error", err)
			continue
		}
		next[id] = s
	}
	d.mu.Lock()
	d.installed, d.applied = next, doc.Version
	d.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.report(rctx); err != nil {
		d.f.applyErrors.Add(1)
		d.f.log.Warn("report", "device", d.id, "error", err)
		return
	}
	d.f.observe(d, next)
}

// report publishes the skills topic: the simulated local skills plus every
// installed (fleet-managed) skill, all loaded.
func (d *device) report(ctx context.Context) error {
	d.mu.Lock()
	applied := d.applied
	ids := make([]string, 0, len(d.installed))
	vers := make([]string, 0, len(d.installed))
	for id, s := range d.installed {
		ids, vers = append(ids, id), append(vers, s.Version)
	}
	d.mu.Unlock()
	now := time.Now().UTC()
	skills := make([]state.Skill, 0, len(d.f.localSkills)+len(ids))
	for _, id := range d.f.localSkills {
		skills = append(skills, state.Skill{ID: id, Version: "1.0.0", State: state.Loaded, Active: true,
			WaitingFor: []string{}, Requirements: []string{}, Since: now})
	}
	for i, id := range ids {
		skills = append(skills, state.Skill{ID: id, Version: vers[i], State: state.Loaded, Active: true,
			WaitingFor: []string{}, Requirements: []string{}, Managed: true, Since: now})
	}
	b, err := state.Encode(state.Skills{AppliedVersion: applied, UpdatedAt: now, Skills: skills})
	if err != nil {
		return err
	}
	return d.publish(ctx, d.topics.skills, b)
}

func (d *device) publish(ctx context.Context, t string, payload []byte) error {
	return d.publishProps(ctx, t, payload, nil)
}

// publishProps publishes retained at QoS 1 and waits for the PUBACK; a
// refusal by the broker's ACL or limits is an error.
func (d *device) publishProps(ctx context.Context, t string, payload []byte, user paho.UserProperties) error {
	p := &paho.Publish{Topic: t, QoS: 1, Retain: true, Payload: payload}
	if user != nil {
		p.Properties = &paho.PublishProperties{User: user}
	} else if len(payload) > 0 && payload[0] == '{' {
		p.Properties = &paho.PublishProperties{ContentType: "application/json"}
	}
	r, err := d.client.Publish(ctx, p)
	if err != nil {
		return fmt.Errorf("device %s: publish %s: %w", d.id, t, err)
	}
	if r != nil && r.ReasonCode >= 0x80 {
		return fmt.Errorf("device %s: publish %s: refused with reason 0x%02x", d.id, t, r.ReasonCode)
	}
	return nil
}

// close disconnects cleanly, which does not fire the Will.
func (d *device) close() {
	d.closing.Store(true)
	if d.client != nil {
		_ = d.client.Disconnect(&paho.Disconnect{ReasonCode: 0})
	}
}
