package broker

import (
	"log/slog"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// OnSubscribe applies the subscription limits before mochi subscribes
// anything: a filter longer than MaxTopicLength is refused with 0x8F (topic
// filter invalid), and a filter that would take the client past its role's
// Subscriptions cap with 0x97 (quota exceeded), through the RefusalCode of
// broker/mochi. Filters the client already holds, or that the ACL refuses
// anyway (0x87, OnACLCheck), do not count.
func (p *policy) OnSubscribe(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if cl.Net.Inline {
		return pk
	}
	a, ok := p.table.Load().Lookup(string(cl.Properties.Username))
	if !ok {
		return pk // OnACLCheck refuses every filter
	}
	limit := p.cfg.limits(a.Role).Subscriptions
	held := cl.State.Subscriptions.Len()
	for i := range pk.Filters {
		f := &pk.Filters[i]
		switch {
		case len(f.Filter) > p.cfg.MaxTopicLength:
			f.RefusalCode = packets.ErrTopicFilterInvalid.Code
		case !coveredBy(a.Subscribe, f.Filter):
			continue
		default:
			if _, exists := cl.State.Subscriptions.Get(f.Filter); exists {
				continue
			}
			if limit < 0 || held < limit {
				held++
				continue
			}
			f.RefusalCode = packets.ErrQuotaExceeded.Code
		}
		p.stats.subscriptionsRefused.Add(1)
		p.publishLog.log(p.log, slog.LevelInfo, "subscription refused", "client", peerText(cl.ID),
			"filter", peerText(f.Filter), "held", held, "limit", limit)
	}
	return pk
}
