package api_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/chorus-edge/chorus/fleet/api/apitest"
)

// TestWireFixtures: each fixture encodes to exactly its JSON, and its JSON
// decodes to the same value, so server and client agree on every body.
func TestWireFixtures(t *testing.T) {
	t.Parallel()
	for _, c := range apitest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(c.JSON)); err != nil {
				t.Fatalf("fixture JSON: %v", err)
			}
			got, err := json.Marshal(c.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("encode:\n got %s\nwant %s", got, want.Bytes())
			}
			back := reflect.New(reflect.TypeOf(c.Value))
			if err := json.Unmarshal(want.Bytes(), back.Interface()); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(back.Elem().Interface(), c.Value) {
				t.Errorf("decode:\n got %#v\nwant %#v", back.Elem().Interface(), c.Value)
			}
		})
	}
}
