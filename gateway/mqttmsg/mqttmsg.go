// Package mqttmsg defines the MQTT application message as Chorus passes it
// between its parts: the embedded broker's in-process client
// (broker.Message) and the bus transports (bus.Packet) are this one type,
// so no layer converts it by hand.
package mqttmsg

// Message is one MQTT 5 application message: what a PUBLISH carries,
// without the packet's framing (packet id, dup flag, topic alias).
type Message struct {
	Topic           string
	Payload         []byte
	QoS             byte
	Retain          bool // on delivery: published retained, or a retained message replayed at subscribe
	ContentType     string
	ResponseTopic   string
	CorrelationData []byte
	MessageExpiry   uint32 // seconds; 0 = none
	User            UserProperties
}

// UserProperty is one MQTT 5 user property.
type UserProperty struct{ Key, Value string }

// UserProperties keeps the properties in the order they were sent; MQTT 5
// allows a key more than once [MQTT-3.3.2-18].
type UserProperties []UserProperty

// Get returns the value of the first property named key, or "".
func (u UserProperties) Get(key string) string {
	for _, p := range u {
		if p.Key == key {
			return p.Value
		}
	}
	return ""
}
