// Command percall turns two pccount runs of the same workload at two
// sizes into exact kernel instructions per operation, by function: the
// difference of the per-PC counts (so boot and set-up cancel out)
// divided by the difference in operations. tools/tcgcount/percall.sh
// makes the two runs.
//
//	go run ./tools/tcgcount/percall -kernel build/kernel.elf -a small.counts -b big.counts -ops 20000 [-top 40]
package main

import (
	"debug/elf"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"

	"shortbread/bench/hlltax/exact"
)

type fn struct {
	name       string
	start, end uint64
}

func symbols(path string) ([]fn, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, err
	}
	var out []fn
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			out = append(out, fn{s.Name, s.Value, s.Value + s.Size})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, nil
}

func main() {
	kernel := flag.String("kernel", "build/kernel.elf", "the kernel both runs booted")
	a := flag.String("a", "", "counts of the smaller run")
	b := flag.String("b", "", "counts of the larger run")
	ops := flag.Float64("ops", 0, "operations the larger run did more than the smaller")
	top := flag.Int("top", 40, "functions to list")
	flag.Parse()
	if *a == "" || *b == "" || *ops <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	fns, err := symbols(*kernel)
	if err != nil {
		log.Fatal(err)
	}
	ca, err := exact.ReadFile(*a)
	if err != nil {
		log.Fatal(err)
	}
	cb, err := exact.ReadFile(*b)
	if err != nil {
		log.Fatal(err)
	}
	delta := map[uint64]float64{}
	for _, c := range cb {
		delta[c.PC] += float64(c.N)
	}
	for _, c := range ca {
		delta[c.PC] -= float64(c.N)
	}
	// A function's calls are the executions of its first instruction
	// (a loop that jumps back to the entry counts each turn: the Go
	// compiler puts the stack check there, so loops start later).
	byFn, calls := map[string]float64{}, map[string]float64{}
	var total float64
	for pc, d := range delta {
		i := sort.Search(len(fns), func(i int) bool { return fns[i].end > pc })
		name := "?"
		if i < len(fns) && fns[i].start <= pc {
			name = fns[i].name
			if fns[i].start == pc {
				calls[name] += d
			}
		}
		byFn[name] += d
		total += d
	}
	type row struct {
		name string
		n    float64
	}
	var rows []row
	for k, v := range byFn {
		rows = append(rows, row{k, v})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	fmt.Printf("%.0f kernel instructions an operation (instructions, share, calls an operation)\n", total / *ops)
	for i, r := range rows {
		if i == *top {
			break
		}
		fmt.Printf("%8.1f %5.1f%% %7.2f  %s\n", r.n / *ops, 100*r.n/total, calls[r.name] / *ops, r.name)
	}
}
