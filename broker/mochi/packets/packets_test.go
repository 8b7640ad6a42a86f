// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2023 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package packets

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/jinzhu/copier"
	"github.com/stretchr/testify/require"
)

const pkInfo = "packet type %v, %s"

var packetList = []byte{
	Connect,
	Connack,
	Publish,
	Puback,
	Pubrec,
	Pubrel,
	Pubcomp,
	Subscribe,
	Suback,
	Unsubscribe,
	Unsuback,
	Pingreq,
	Pingresp,
	Disconnect,
	Auth,
}

var pkTable = []TPacketCase{
	TPacketData[Connect].Get(TConnectMqtt311),
	TPacketData[Connect].Get(TConnectMqtt5),
	TPacketData[Connect].Get(TConnectUserPassLWT),
	TPacketData[Connack].Get(TConnackAcceptedMqtt5),
	TPacketData[Connack].Get(TConnackAcceptedNoSession),
	TPacketData[Publish].Get(TPublishBasic),
	TPacketData[Publish].Get(TPublishMqtt5),
	TPacketData[Puback].Get(TPuback),
	TPacketData[Pubrec].Get(TPubrec),
	TPacketData[Pubrel].Get(TPubrel),
	TPacketData[Pubcomp].Get(TPubcomp),
	TPacketData[Subscribe].Get(TSubscribe),
	TPacketData[Subscribe].Get(TSubscribeMqtt5),
	TPacketData[Suback].Get(TSuback),
	TPacketData[Unsubscribe].Get(TUnsubscribe),
	TPacketData[Unsubscribe].Get(TUnsubscribeMqtt5),
	TPacketData[Pingreq].Get(TPingreq),
	TPacketData[Pingresp].Get(TPingresp),
	TPacketData[Disconnect].Get(TDisconnect),
	TPacketData[Disconnect].Get(TDisconnectMqtt5),
}

func TestNewPackets(t *testing.T) {
	s := NewPackets()
	require.NotNil(t, s.internal)
}

func TestPacketsAdd(t *testing.T) {
	s := NewPackets()
	s.Add("cl1", Packet{})
	require.Contains(t, s.internal, "cl1")
}

func TestPacketsGet(t *testing.T) {
	s := NewPackets()
	s.Add("cl1", Packet{TopicName: "a1"})
	s.Add("cl2", Packet{TopicName: "a2"})
	require.Contains(t, s.internal, "cl1")
	require.Contains(t, s.internal, "cl2")

	pk, ok := s.Get("cl1")
	require.True(t, ok)
	require.Equal(t, "a1", pk.TopicName)
}

func TestPacketsGetAll(t *testing.T) {
	s := NewPackets()
	s.Add("cl1", Packet{TopicName: "a1"})
	s.Add("cl2", Packet{TopicName: "a2"})
	s.Add("cl3", Packet{TopicName: "a3"})
	require.Contains(t, s.internal, "cl1")
	require.Contains(t, s.internal, "cl2")
	require.Contains(t, s.internal, "cl3")

	subs := s.GetAll()
	require.Len(t, subs, 3)
}

func TestPacketsLen(t *testing.T) {
	s := NewPackets()
	s.Add("cl1", Packet{TopicName: "a1"})
	s.Add("cl2", Packet{TopicName: "a2"})
	require.Contains(t, s.internal, "cl1")
	require.Contains(t, s.internal, "cl2")
	require.Equal(t, 2, s.Len())
}

func TestSPacketsDelete(t *testing.T) {
	s := NewPackets()
	s.Add("cl1", Packet{TopicName: "a1"})
	require.Contains(t, s.internal, "cl1")

	s.Delete("cl1")
	_, ok := s.Get("cl1")
	require.False(t, ok)
}

func TestFormatPacketID(t *testing.T) {
	for _, id := range []uint16{0, 7, 0x100, 0xffff} {
		packet := &Packet{PacketID: id}
		require.Equal(t, fmt.Sprint(id), packet.FormatID())
	}
}

func TestSubscriptionOptionsEncodeDecode(t *testing.T) {
	p := &Subscription{
		Qos:               2,
		NoLocal:           true,
		RetainAsPublished: true,
		RetainHandling:    2,
	}
	x := new(Subscription)
	x.decode(p.encode())
	require.Equal(t, *p, *x)

	p = &Subscription{
		Qos:               1,
		NoLocal:           false,
		RetainAsPublished: false,
		RetainHandling:    1,
	}
	x = new(Subscription)
	x.decode(p.encode())
	require.Equal(t, *p, *x)
}

func TestPacketEncode(t *testing.T) {
	for _, pkt := range packetList {
		require.Contains(t, TPacketData, pkt)
		for _, wanted := range TPacketData[pkt] {
			t.Run(fmt.Sprintf("%s %s", PacketNames[pkt], wanted.Desc), func(t *testing.T) {
				if !encodeTestOK(wanted) {
					return
				}

				pk := new(Packet)
				_ = copier.Copy(pk, wanted.Packet)
				require.Equal(t, pkt, pk.FixedHeader.Type, pkInfo, pkt, wanted.Desc)

				pk.Mods.AllowResponseInfo = true

				buf := new(bytes.Buffer)
				var err error
				switch pkt {
				case Connect:
					err = pk.ConnectEncode(buf)
				case Connack:
					err = pk.ConnackEncode(buf)
				case Publish:
					err = pk.PublishEncode(buf)
				case Puback:
					err = pk.PubackEncode(buf)
				case Pubrec:
					err = pk.PubrecEncode(buf)
				case Pubrel:
					err = pk.PubrelEncode(buf)
				case Pubcomp:
					err = pk.PubcompEncode(buf)
				case Subscribe:
					err = pk.SubscribeEncode(buf)
				case Suback:
					err = pk.SubackEncode(buf)
				case Unsubscribe:
					err = pk.UnsubscribeEncode(buf)
				case Unsuback:
					err = pk.UnsubackEncode(buf)
				case Pingreq:
					err = pk.PingreqEncode(buf)
				case Pingresp:
					err = pk.PingrespEncode(buf)
				case Disconnect:
					err = pk.DisconnectEncode(buf)
				case Auth:
					err = pk.AuthEncode(buf)
				}
				if wanted.Expect != nil {
					require.Error(t, err, pkInfo, pkt, wanted.Desc)
					return
				}

				require.NoError(t, err, pkInfo, pkt, wanted.Desc)
				encoded := buf.Bytes()

				// If ActualBytes is set, compare mutated version of byte string instead (to avoid length mismatches, etc).
				if len(wanted.ActualBytes) > 0 {
					wanted.RawBytes = wanted.ActualBytes
				}
				require.EqualValues(t, wanted.RawBytes, encoded, pkInfo, pkt, wanted.Desc)
			})
		}
	}
}

func TestPacketDecode(t *testing.T) {
	for _, pkt := range packetList {
		require.Contains(t, TPacketData, pkt)
		for _, wanted := range TPacketData[pkt] {
			t.Run(fmt.Sprintf("%s %s", PacketNames[pkt], wanted.Desc), func(t *testing.T) {
				if !decodeTestOK(wanted) {
					return
				}

				pk := &Packet{FixedHeader: FixedHeader{Type: pkt}}
				pk.Mods.AllowResponseInfo = true
				_ = pk.FixedHeader.Decode(wanted.RawBytes[0])
				if len(wanted.RawBytes) > 0 {
					pk.FixedHeader.Remaining = int(wanted.RawBytes[1])
				}

				if wanted.Packet != nil && wanted.Packet.ProtocolVersion != 0 {
					pk.ProtocolVersion = wanted.Packet.ProtocolVersion
				}

				buf := wanted.RawBytes[2:]
				var err error
				switch pkt {
				case Connect:
					err = pk.ConnectDecode(buf)
				case Connack:
					err = pk.ConnackDecode(buf)
				case Publish:
					err = pk.PublishDecode(buf)
				case Puback:
					err = pk.PubackDecode(buf)
				case Pubrec:
					err = pk.PubrecDecode(buf)
				case Pubrel:
					err = pk.PubrelDecode(buf)
				case Pubcomp:
					err = pk.PubcompDecode(buf)
				case Subscribe:
					err = pk.SubscribeDecode(buf)
				case Suback:
					err = pk.SubackDecode(buf)
				case Unsubscribe:
					err = pk.UnsubscribeDecode(buf)
				case Unsuback:
					err = pk.UnsubackDecode(buf)
				case Pingreq:
					err = pk.PingreqDecode(buf)
				case Pingresp:
					err = pk.PingrespDecode(buf)
				case Disconnect:
					err = pk.DisconnectDecode(buf)
				case Auth:
					err = pk.AuthDecode(buf)
				}

				if wanted.FailFirst != nil {
					require.Error(t, err, pkInfo, pkt, wanted.Desc)
					require.ErrorIs(t, err, wanted.FailFirst, pkInfo, pkt, wanted.Desc)
					return
				}

				require.NoError(t, err, pkInfo, pkt, wanted.Desc)

				require.EqualValues(t, wanted.Packet.Filters, pk.Filters, pkInfo, pkt, wanted.Desc)

				require.Equal(t, wanted.Packet.FixedHeader.Type, pk.FixedHeader.Type, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.FixedHeader.Dup, pk.FixedHeader.Dup, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.FixedHeader.Qos, pk.FixedHeader.Qos, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.FixedHeader.Retain, pk.FixedHeader.Retain, pkInfo, pkt, wanted.Desc)

				if pkt == Connect {
					// we use ProtocolVersion for controlling packet encoding, but we don't need to test
					// against it unless it's a connect packet.
					require.Equal(t, wanted.Packet.ProtocolVersion, pk.ProtocolVersion, pkInfo, pkt, wanted.Desc)
				}
				require.Equal(t, wanted.Packet.Connect.ProtocolName, pk.Connect.ProtocolName, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.Clean, pk.Connect.Clean, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.ClientIdentifier, pk.Connect.ClientIdentifier, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.Keepalive, pk.Connect.Keepalive, pkInfo, pkt, wanted.Desc)

				require.Equal(t, wanted.Packet.Connect.UsernameFlag, pk.Connect.UsernameFlag, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.Username, pk.Connect.Username, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.PasswordFlag, pk.Connect.PasswordFlag, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.Password, pk.Connect.Password, pkInfo, pkt, wanted.Desc)

				require.Equal(t, wanted.Packet.Connect.WillFlag, pk.Connect.WillFlag, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.WillTopic, pk.Connect.WillTopic, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.WillPayload, pk.Connect.WillPayload, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.WillQos, pk.Connect.WillQos, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.WillRetain, pk.Connect.WillRetain, pkInfo, pkt, wanted.Desc)

				require.Equal(t, wanted.Packet.ReasonCodes, pk.ReasonCodes, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.ReasonCode, pk.ReasonCode, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.SessionPresent, pk.SessionPresent, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.PacketID, pk.PacketID, pkInfo, pkt, wanted.Desc)

				require.EqualValues(t, wanted.Packet.Properties, pk.Properties)
				require.EqualValues(t, wanted.Packet.Connect.WillProperties, pk.Connect.WillProperties)
			})
		}
	}
}

func TestValidate(t *testing.T) {
	for _, pkt := range packetList {
		require.Contains(t, TPacketData, pkt)
		for _, wanted := range TPacketData[pkt] {
			t.Run(fmt.Sprintf("%s %s", PacketNames[pkt], wanted.Desc), func(t *testing.T) {
				if wanted.Group == "validate" || wanted.Primary {
					pk := wanted.Packet
					var err error
					switch pkt {
					case Connect:
						err = pk.ConnectValidate()
					case Publish:
						err = pk.PublishValidate(1024)
					case Subscribe:
						err = pk.SubscribeValidate()
					case Unsubscribe:
						err = pk.UnsubscribeValidate()
					case Auth:
						err = pk.AuthValidate()
					}

					if wanted.Expect != nil {
						require.Error(t, err, pkInfo, pkt, wanted.Desc)
						require.ErrorIs(t, wanted.Expect, err, pkInfo, pkt, wanted.Desc)
					}
				}
			})
		}
	}
}

func TestAckValidatePubrec(t *testing.T) {
	for _, b := range []byte{
		CodeSuccess.Code,
		CodeNoMatchingSubscribers.Code,
		ErrUnspecifiedError.Code,
		ErrImplementationSpecificError.Code,
		ErrNotAuthorized.Code,
		ErrTopicNameInvalid.Code,
		ErrPacketIdentifierInUse.Code,
		ErrQuotaExceeded.Code,
		ErrPayloadFormatInvalid.Code,
	} {
		pk := Packet{FixedHeader: FixedHeader{Type: Pubrec}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}
	pk := Packet{FixedHeader: FixedHeader{Type: Pubrec}, ReasonCode: ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestAckValidatePubrel(t *testing.T) {
	for _, b := range []byte{
		CodeSuccess.Code,
		ErrPacketIdentifierNotFound.Code,
	} {
		pk := Packet{FixedHeader: FixedHeader{Type: Pubrel}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}
	pk := Packet{FixedHeader: FixedHeader{Type: Pubrel}, ReasonCode: ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestAckValidatePubcomp(t *testing.T) {
	for _, b := range []byte{
		CodeSuccess.Code,
		ErrPacketIdentifierNotFound.Code,
	} {
		pk := Packet{FixedHeader: FixedHeader{Type: Pubcomp}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}
	pk := Packet{FixedHeader: FixedHeader{Type: Pubrel}, ReasonCode: ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestAckValidateSuback(t *testing.T) {
	for _, b := range []byte{
		CodeGrantedQos0.Code,
		CodeGrantedQos1.Code,
		CodeGrantedQos2.Code,
		ErrUnspecifiedError.Code,
		ErrImplementationSpecificError.Code,
		ErrNotAuthorized.Code,
		ErrTopicFilterInvalid.Code,
		ErrPacketIdentifierInUse.Code,
		ErrQuotaExceeded.Code,
		ErrSharedSubscriptionsNotSupported.Code,
		ErrSubscriptionIdentifiersNotSupported.Code,
		ErrWildcardSubscriptionsNotSupported.Code,
	} {
		pk := Packet{FixedHeader: FixedHeader{Type: Suback}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}

	pk := Packet{FixedHeader: FixedHeader{Type: Suback}, ReasonCode: ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestAckValidateUnsuback(t *testing.T) {
	for _, b := range []byte{
		CodeSuccess.Code,
		CodeNoSubscriptionExisted.Code,
		ErrUnspecifiedError.Code,
		ErrImplementationSpecificError.Code,
		ErrNotAuthorized.Code,
		ErrTopicFilterInvalid.Code,
		ErrPacketIdentifierInUse.Code,
	} {
		pk := Packet{FixedHeader: FixedHeader{Type: Unsuback}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}

	pk := Packet{FixedHeader: FixedHeader{Type: Unsuback}, ReasonCode: ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestReasonCodeValidMisc(t *testing.T) {
	pk := Packet{FixedHeader: FixedHeader{Type: Connack}, ReasonCode: CodeSuccess.Code}
	require.True(t, pk.ReasonCodeValid())
}

func TestCopy(t *testing.T) {
	for _, tt := range pkTable {
		pkc := tt.Packet.Copy(true)

		require.Equal(t, tt.Packet.FixedHeader.Qos, pkc.FixedHeader.Qos, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, false, pkc.FixedHeader.Dup, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, false, pkc.FixedHeader.Retain, pkInfo, tt.Case, tt.Desc)

		require.Equal(t, tt.Packet.TopicName, pkc.TopicName, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.ClientIdentifier, pkc.Connect.ClientIdentifier, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.Keepalive, pkc.Connect.Keepalive, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.ProtocolVersion, pkc.ProtocolVersion, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.PasswordFlag, pkc.Connect.PasswordFlag, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.UsernameFlag, pkc.Connect.UsernameFlag, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillQos, pkc.Connect.WillQos, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillTopic, pkc.Connect.WillTopic, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillFlag, pkc.Connect.WillFlag, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillRetain, pkc.Connect.WillRetain, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillProperties, pkc.Connect.WillProperties, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Properties, pkc.Properties, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.Clean, pkc.Connect.Clean, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.SessionPresent, pkc.SessionPresent, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.ReasonCode, pkc.ReasonCode, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.PacketID, pkc.PacketID, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Filters, pkc.Filters, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Payload, pkc.Payload, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.Password, pkc.Connect.Password, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.Username, pkc.Connect.Username, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.ProtocolName, pkc.Connect.ProtocolName, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillPayload, pkc.Connect.WillPayload, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.ReasonCodes, pkc.ReasonCodes, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Created, pkc.Created, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Origin, pkc.Origin, pkInfo, tt.Case, tt.Desc)
		require.EqualValues(t, pkc.Properties, tt.Packet.Properties)

		pkcc := tt.Packet.Copy(false)
		require.Equal(t, uint16(0), pkcc.PacketID, pkInfo, tt.Case, tt.Desc)
	}
}

func TestMergeSubscription(t *testing.T) {
	sub := Subscription{
		Filter:            "a/b/c",
		RetainHandling:    0,
		Qos:               0,
		RetainAsPublished: false,
		NoLocal:           false,
		Identifier:        1,
	}

	sub2 := Subscription{
		Filter:            "a/b/d",
		RetainHandling:    0,
		Qos:               2,
		RetainAsPublished: false,
		NoLocal:           true,
		Identifier:        2,
	}

	expect := Subscription{
		Filter:            "a/b/c",
		RetainHandling:    0,
		Qos:               2,
		RetainAsPublished: false,
		NoLocal:           true,
		Identifier:        1,
		Identifiers: map[string]int{
			"a/b/c": 1,
			"a/b/d": 2,
		},
	}
	require.Equal(t, expect, sub.Merge(sub2))
}

// Packets holds a packet without the connect parameters and properties it
// does not have, and gives back exactly the packet it was given.
func TestPacketsRoundTripCompact(t *testing.T) {
	full := Packet{
		FixedHeader: FixedHeader{Type: Publish, Qos: 1, Retain: true, Remaining: 10},
		TopicName:   "a/b", Payload: []byte("hi"), Origin: "c1", Created: 5, Expiry: 9, PacketID: 7,
		ProtocolVersion: 5, Mods: Mods{MaxSize: 3},
		Properties: Properties{ContentType: "json", User: []UserProperty{{Key: "k", Val: "v"}}, MessageExpiryInterval: 4},
		Connect:    ConnectParams{WillTopic: "w", WillProperties: Properties{WillDelayInterval: 3}},
	}
	bare := Packet{FixedHeader: FixedHeader{Type: Publish, Retain: true}, TopicName: "x", Payload: []byte("y")}
	p := NewPackets()
	p.Add("full", full)
	p.Add("bare", bare)
	got, ok := p.Get("full")
	require.True(t, ok)
	require.Equal(t, full, got)
	got, ok = p.Get("bare")
	require.True(t, ok)
	require.Equal(t, bare, got)
	require.Nil(t, p.internal["bare"].properties)
	require.Nil(t, p.internal["bare"].rare)
	require.Equal(t, map[string]Packet{"full": full, "bare": bare}, p.GetAll())

	// A packet with reason codes or filters and no connect parameters keeps
	// them (empty but non-nil ones too).
	sub := Packet{FixedHeader: FixedHeader{Type: Suback}, ReasonCodes: []byte{}, Filters: Subscriptions{{Filter: "f"}}}
	p.Add("sub", sub)
	got, ok = p.Get("sub")
	require.True(t, ok)
	require.Equal(t, sub, got)
	require.NotNil(t, got.ReasonCodes)
	require.LessOrEqual(t, int(unsafe.Sizeof(storedPacket{})), 128, "a retained publish's stored form fits the 128-byte size class (was 168: 176)")
}

// TestPacketsPropertiesRoundTrip: a packet's properties come back as they
// went in, whether they are only the common ones (held compactly), any
// other field besides, or empty but non-nil.
func TestPacketsPropertiesRoundTrip(t *testing.T) {
	cases := map[string]struct {
		props  Properties
		common bool // held as commonProperties
		full   bool // held as a whole Properties
	}{
		"none":               {},
		"content type":       {props: Properties{ContentType: "application/json"}, common: true},
		"user":               {props: Properties{User: []UserProperty{{Key: "session", Val: "3"}}}, common: true},
		"empty user":         {props: Properties{User: []UserProperty{}}, common: true},
		"expiry and format":  {props: Properties{MessageExpiryInterval: 300, PayloadFormat: 1, PayloadFormatFlag: true}, common: true},
		"format flag only":   {props: Properties{PayloadFormatFlag: true}, common: true},
		"response topic":     {props: Properties{ContentType: "a", ResponseTopic: "r"}, full: true},
		"correlation data":   {props: Properties{CorrelationData: []byte{}}, full: true},
		"subscription ids":   {props: Properties{SubscriptionIdentifier: []int{1}, User: []UserProperty{{Key: "k"}}}, full: true},
		"topic alias":        {props: Properties{TopicAlias: 2, TopicAliasFlag: true}, full: true},
		"reason string only": {props: Properties{ReasonString: "x"}, full: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pk := Packet{FixedHeader: FixedHeader{Type: Publish, Retain: true}, TopicName: "t", Payload: []byte("p"), Properties: tc.props}
			p := NewPackets()
			p.Add("t", pk)
			got, ok := p.Get("t")
			require.True(t, ok)
			require.Equal(t, pk, got)
			require.Equal(t, tc.common, p.internal["t"].common != nil, "held as commonProperties")
			require.Equal(t, tc.full, p.internal["t"].properties != nil, "held as Properties")
		})
	}
	require.LessOrEqual(t, int(unsafe.Sizeof(commonProperties{})), 48, "the common properties fit the 48-byte size class (a Properties is 256)")
}

func TestPacketsDeleteIf(t *testing.T) {
	p := NewPackets()
	p.Add("a", Packet{Expiry: 1})
	require.False(t, p.DeleteIf("a", func(pk Packet) bool { return pk.Expiry > 1 }))
	require.False(t, p.DeleteIf("missing", func(Packet) bool { return true }))
	require.Equal(t, 1, p.Len())
	require.True(t, p.DeleteIf("a", func(pk Packet) bool { return pk.Expiry == 1 }))
	require.Equal(t, 0, p.Len())
}

// BenchmarkPacketsAddRetained is what holding one retained publish costs
// Packets (B/op: the stored packet, its size class).
func BenchmarkPacketsAddRetained(b *testing.B) {
	p := NewPackets()
	pk := Packet{FixedHeader: FixedHeader{Type: Publish, Qos: 1, Retain: true}, TopicName: "chorus/v1/d/skills",
		Payload: []byte("{}"), Origin: "d", Created: 1}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.Add(pk.TopicName, pk)
	}
}

// TestPacketsCompressLargePayloads: with CompressPayloadsAbove, a payload
// longer than the bound that deflates well is held compressed and read back
// as it went in (Get, GetAll, DeleteIf); a short one or one that does not
// shrink by a quarter is held as given.
func TestPacketsCompressLargePayloads(t *testing.T) {
	p := NewPackets()
	p.CompressPayloadsAbove(64, nil)
	large := []byte(strings.Repeat(`{"p":"switch","stat_t":"chorus/v1/pi/skills","pl_on":"ON"},`, 80))
	random := make([]byte, 4096) // xorshift: deflate cannot shrink it
	for i, x := 0, uint32(2463534242); i < len(random); i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		random[i] = byte(x)
	}
	cases := map[string]struct {
		payload    []byte
		compressed bool
	}{
		"large":        {payload: large, compressed: true},
		"short":        {payload: large[:64]},
		"incompressed": {payload: random},
		"empty":        {},
	}
	want := map[string]Packet{}
	for name, tc := range cases {
		pk := Packet{FixedHeader: FixedHeader{Type: Publish, Retain: true}, TopicName: name, Payload: tc.payload,
			Properties: Properties{ContentType: "application/json"}}
		p.Add(name, pk)
		want[name] = pk
		got, ok := p.Get(name)
		require.True(t, ok, name)
		require.Equal(t, pk, got, name)
		require.Equal(t, tc.compressed, p.internal[name].compressed, name)
	}
	require.Less(t, len(p.internal["large"].Payload), len(large)/4, "a repetitive payload is held in under a quarter")
	require.Equal(t, want, p.GetAll())
	require.True(t, p.DeleteIf("large", func(pk Packet) bool { return bytes.Equal(pk.Payload, large) }))

	// Concurrent adds and reads share the one writer and the reader pool.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				p.Add(id, Packet{TopicName: id, Payload: large})
				got, _ := p.Get(id)
				if !bytes.Equal(got.Payload, large) {
					t.Errorf("%s: payload changed", id)
					return
				}
			}
		}(strconv.Itoa(i))
	}
	wg.Wait()
}

// TestPacketsCompressWithDictionary: with a preset dictionary, a payload
// that differs from the dictionary's sample only in its names is held in a
// fraction of what deflate alone needs, and is read back as it went in;
// payloads unlike the sample still round-trip, and a dictionary longer than
// deflate's 32 KiB window keeps its last 32 KiB.
func TestPacketsCompressWithDictionary(t *testing.T) {
	doc := func(name string) []byte { // the shape of a Home Assistant device document
		return []byte(`{"dev":{"ids":["chorus_` + name + `"],"name":"` + name + `","mdl":"Chorus satellite","sw":"0.3.0",` +
			`"via_device":"chorus_gateway"},"o":{"name":"chorus","url":"https://github.com/chorus-edge/chorus"},` +
			`"avty_t":"chorus/v1/` + name + `/availability","pl_avail":"online","pl_not_avail":"offline","cmps":{` +
			`"gui":{"ent_cat":"diagnostic","name":"GUI","p":"binary_sensor","pl_off":"OFF","pl_on":"ON","qos":1,` +
			`"stat_t":"chorus/v1/` + name + `/connectivity","uniq_id":"chorus_` + name + `_gui",` +
			`"val_tpl":"{{ 'ON' if value_json.gui else 'OFF' }}"},"internet":{"dev_cla":"connectivity",` +
			`"name":"Internet","stat_t":"chorus/v1/` + name + `/connectivity","uniq_id":"chorus_` + name + `_internet"},` +
			`"weather":{"p":"switch","cmd_t":"chorus/v1/` + name + `/skill/weather/set","ic":"mdi:puzzle",` +
			`"stat_t":"chorus/v1/` + name + `/skills","val_tpl":"{{ value_json.skills.weather.active }}"},` +
			`"weather_update":{"p":"update","ent_pic":"https://brands.home-assistant.io/_/mqtt/icon.png",` +
			`"stat_t":"chorus/v1/` + name + `/skill/weather/update","uniq_id":"chorus_` + name + `_weather_update"}}}`)
	}
	plain, primed := NewPackets(), NewPackets()
	plain.CompressPayloadsAbove(64, nil)
	primed.CompressPayloadsAbove(64, doc("sample"))
	kitchen := doc("kitchen")
	plain.Add("k", Packet{TopicName: "k", Payload: kitchen})
	primed.Add("k", Packet{TopicName: "k", Payload: kitchen})
	require.True(t, primed.internal["k"].compressed)
	require.Less(t, len(primed.internal["k"].Payload)*3, len(plain.internal["k"].Payload),
		"the dictionary holds a document like its sample in under a third of deflate alone (%d vs %d bytes)",
		len(primed.internal["k"].Payload), len(plain.internal["k"].Payload))
	got, ok := primed.Get("k")
	require.True(t, ok)
	require.Equal(t, kitchen, got.Payload)

	unlike := []byte(strings.Repeat("unlike the sample, still repetitive; ", 40))
	primed.Add("u", Packet{TopicName: "u", Payload: unlike})
	got, _ = primed.Get("u")
	require.Equal(t, unlike, got.Payload)

	long := NewPackets()
	long.CompressPayloadsAbove(64, append(bytes.Repeat([]byte{'x'}, 40<<10), doc("sample")...))
	require.Len(t, long.codec.dict, 32<<10)
	long.Add("k", Packet{TopicName: "k", Payload: kitchen})
	got, _ = long.Get("k")
	require.Equal(t, kitchen, got.Payload)
	require.Less(t, len(long.internal["k"].Payload)*3, len(plain.internal["k"].Payload), "the dictionary's tail is kept")
}

// TestPacketsShareCommonProperties: packets whose properties are the same
// content type, expiry and payload format, without user properties, share
// one commonProperties (fork patch "shared retained properties", broker.md),
// each reads back as added, and at most maxSharedProperties values are
// shared, so a peer choosing a content type per publish cannot grow the set.
func TestPacketsShareCommonProperties(t *testing.T) {
	p := NewPackets()
	json := Packet{FixedHeader: FixedHeader{Type: Publish, Retain: true}, TopicName: "a", Payload: []byte("{}"),
		Properties: Properties{ContentType: "application/json"}}
	p.Add("a", json)
	json.TopicName = "b"
	p.Add("b", json)
	require.Same(t, p.internal["a"].common, p.internal["b"].common)

	user := json
	user.TopicName = "u"
	user.Properties.User = []UserProperty{{Key: "session", Val: "1"}}
	p.Add("u", user)
	emptyUser := json
	emptyUser.TopicName = "e"
	emptyUser.Properties.User = []UserProperty{}
	p.Add("e", emptyUser)
	require.NotSame(t, p.internal["a"].common, p.internal["u"].common)
	require.NotSame(t, p.internal["a"].common, p.internal["e"].common)
	for id, want := range map[string]Packet{"b": json, "u": user, "e": emptyUser} {
		got, ok := p.Get(id)
		require.True(t, ok)
		require.Equal(t, want, got, id)
	}

	for i := 0; i < 3*maxSharedProperties; i++ {
		pk := json
		pk.TopicName = "t" + strconv.Itoa(i)
		pk.Properties.ContentType = "type/" + strconv.Itoa(i)
		p.Add(pk.TopicName, pk)
		got, _ := p.Get(pk.TopicName)
		require.Equal(t, pk, got)
	}
	require.Len(t, p.shared, maxSharedProperties)

	// Bytes per retained message with a content type, besides the first.
	const n = 20000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "dev/" + strconv.Itoa(i)
	}
	q := NewPackets()
	q.Add("first", json)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, id := range ids {
		pk := json
		pk.TopicName = id
		pk.Properties.ContentType = strings.Clone("application/json") // as Chorus's ownStrings gives it
		q.Add(id, pk)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	t.Logf("retained message with a content type: %.0f bytes besides its payload's and topic's", per)
	require.Less(t, per, 200.0) // a stored packet (128) and its map slot; it was 192 more with its own properties (48) and content type (16)
	runtime.KeepAlive(q)
}
