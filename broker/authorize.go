package broker

// MayPublish reports whether the account may publish to topic (retained when
// retain is set) by its topic filters and denied bus types: the same decision
// the embedded broker's ACL hook takes, for an external broker's
// authorization backend (fleet/external). Payload checks (forged skill ids,
// size and depth limits) and rate limits are not part of it.
func (a *Account) MayPublish(topic string, retain bool) bool {
	if !coveredBy(a.Publish, topic) || typeDenied(a, topic) {
		return false
	}
	return !retain || coveredBy(a.Retain, topic)
}

// MaySubscribe reports whether the account may subscribe to filter (and
// receive what it matches).
func (a *Account) MaySubscribe(filter string) bool { return coveredBy(a.Subscribe, filter) }
