package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPhases(t *testing.T) {
	log := filepath.Join(t.TempDir(), "trace.log")
	// Two round trips: submit, complete 50 µs later, interrupt 10 µs
	// after that, next submit 200 µs later; noise lines in between.
	os.WriteFile(log, []byte(`1@100.000000:virtio_blk_handle_read vdev 0x1 req 0x2 sector 0 nsectors 8
1@100.000050:virtio_blk_rw_complete vdev 0x1 req 0x2 ret 0
msix_write_config dev virtio-blk-pci enabled 1 masked 0
1@100.000060:apic_deliver_irq dest 0 dest_mode 0 delivery_mode 0 vector 55 trigger_mode 0
1@100.000070:apic_deliver_irq dest 0 dest_mode 0 delivery_mode 0 vector 236 trigger_mode 0
1@100.000260:virtio_blk_handle_read vdev 0x1 req 0x3 sector 8 nsectors 8
1@100.000300:virtio_blk_rw_complete vdev 0x1 req 0x3 ret 0
1@100.000305:apic_deliver_irq dest 0 dest_mode 0 delivery_mode 0 vector 55 trigger_mode 0
1@100.001305:virtio_blk_handle_read vdev 0x1 req 0x4 sector 16 nsectors 8
`), 0o644)
	dev, del, turn, err := phases(log, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := func(name string, got []float64, w ...float64) {
		if len(got) != len(w) {
			t.Fatalf("%s: %v, want %v", name, got, w)
		}
		for i := range w {
			if d := got[i] - w[i]; d < -0.5 || d > 0.5 {
				t.Errorf("%s: %v, want %v", name, got, w)
			}
		}
	}
	want("device", dev, 50, 40)
	want("delivery", del, 10, 5)
	want("turnaround", turn, 200, 1000)
}
