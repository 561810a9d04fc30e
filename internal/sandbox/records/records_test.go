package records

import (
	"path/filepath"
	"testing"
)

// TestBuckets: values are kept as JSON by key in their bucket, which a
// reopened file still has; Get reports a missing key, Each walks the keys
// in order and Remove deletes one.
func TestBuckets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hutch.db")
	db, err := Open(path, "sandboxes")
	if err != nil {
		t.Fatal(err)
	}
	type v struct{ N int }
	if err := db.In("sandboxes").Put("b", v{2}); err != nil {
		t.Fatal(err)
	}
	other, err := db.Bucket("other")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Put("a", v{1}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got v
	if ok, err := db.In("sandboxes").Get("b", &got); !ok || err != nil || got.N != 2 {
		t.Fatalf("Get(b) = %v, %v, %+v; want true, nil, {2}", ok, err, got)
	}
	if ok, err := db.In("sandboxes").Get("a", &got); ok || err != nil {
		t.Fatalf("Get(a) in the wrong bucket = %v, %v; want false, nil", ok, err)
	}
	other, err = db.Bucket("other")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Put("c", v{3}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := other.Each(func(k string, raw []byte) error { keys = append(keys, k+"="+string(raw)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != `a={"N":1}` || keys[1] != `c={"N":3}` {
		t.Fatalf("Each = %q, want a then c", keys)
	}
	if err := other.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := other.Get("a", &got); ok {
		t.Fatal("a removed key is still there")
	}
}
