package nvmetest

import (
	"shortbread/kernel/drivers/dmatest"
	"shortbread/kernel/drivers/nvme"
)

// Mem is simulated guest memory (dmatest) handing out nvme.Pages.
type Mem struct{ *dmatest.Mem }

func NewMem() *Mem { return &Mem{dmatest.New(nvme.PageSize)} }

func (m *Mem) Alloc() (nvme.Page, error) {
	phys, b, err := m.AllocPage()
	if err != nil {
		return nvme.Page{}, err
	}
	return nvme.Page{Phys: phys, Mem: b}, nil
}

func (m *Mem) Free(p nvme.Page) { m.FreePage(p.Phys) }
