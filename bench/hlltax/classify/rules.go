package classify

import (
	"strings"
	"unicode"
)

// Function-level rules. A function whose name matches one of them belongs
// to that class as a whole: every instruction in it, its own prologue and
// bounds checks included, since the whole function exists only because of
// the language. Names are compared after removing an ABI wrapper's ".abi0"
// suffix; an exact rule also covers the function's closures
// ("runtime.gcStart" covers "runtime.gcStart.func1").
//
// The rules are checked in this order: machine layer (Other), Prologue,
// WriteBarrier, Safety, GC.

// prologueFuncs are the stack-growth entry points that the prologue's
// out-of-line block calls.
var prologueFuncs = []string{
	"runtime.morestack",
	"runtime.morestack_noctxt",
	"runtime.morestackc",
	"runtime.newstack",
	"runtime.badmorestackg0",
	"runtime.badmorestackgsignal",
}

// writeBarrierFuncs are the write barrier's buffer and bulk-barrier code.
// "runtime.gcWriteBarrier" also covers gcWriteBarrier1..8 (see
// writeBarrierPrefixes) and the assembly-local "gcWriteBarrier".
var writeBarrierFuncs = []string{
	"runtime.gcWriteBarrier",
	"runtime.wbZero",
	"runtime.wbMove",
	"runtime.bulkBarrierPreWrite",
	"runtime.bulkBarrierPreWriteSrcOnly",
	"runtime.bulkBarrierBitmap",
	"runtime.typeBitsBulkBarrier",
	"runtime.atomicwb",
}

var writeBarrierPrefixes = []string{
	"runtime.gcWriteBarrier", // gcWriteBarrier1 .. gcWriteBarrier8
	"runtime.wbBuf",          // wbBufFlush, wbBufFlush1 and closures
	"runtime.(*wbBuf).",
}

// checkPanicFuncs are the helpers that generated code calls when a safety
// check fails. A call to one of them ends a panic block (see patterns.go).
var checkPanicFuncs = []string{
	"runtime.panicdivide",
	"runtime.panicoverflow",
	"runtime.panicshift",
	"runtime.panicfloat",
	"runtime.panicnildottype",
	"runtime.panicmem",
	"runtime.panicmemAddr",
	"runtime.panicwrap",
	"runtime.panicmakeslicelen",
	"runtime.panicmakeslicecap",
	"runtime.panicrangestate",
	"runtime.panicCheck1",
	"runtime.panicCheck2",
}

var checkPanicPrefixes = []string{
	"runtime.panicBounds", // Go 1.25+: panicBounds, panicBounds64, panicBounds32, panicBounds32X
	"runtime.panicExtend",
	"runtime.panicIndex", // Go ≤ 1.24: panicIndex, panicIndexU, ...
	"runtime.panicSlice",
	"runtime.goPanicIndex",
	"runtime.goPanicSlice",
	"runtime.panicdottype", // panicdottypeE, panicdottypeI
	"runtime.panicunsafeslice",
	"runtime.panicunsafestring",
}

// safetyFuncs are safety functions that return normally when the check
// passes: interface-to-interface type assertions.
var safetyFuncs = []string{
	"runtime.typeAssert",
	"runtime.assertE2I",
}

// gcFuncs are the collector's mark, sweep and scavenge machinery, its
// pacer and its work buffers. Besides these, every runtime function named
// "runtime.gc" followed by an upper-case letter is GC (gcStart, gcDrain,
// gcBgMarkWorker, gcAssistAlloc, gcMarkDone, gcMarkTermination, gcSweep,
// gcTrigger.test, ...), except gcWriteBarrier*.
var gcFuncs = []string{
	"runtime.GC",
	"runtime.gcenable",
	"runtime.gcinit",
	"runtime.gcmarknewobject",
	"runtime.deductAssistCredit",
	// mark
	"runtime.markroot",
	"runtime.markrootBlock",
	"runtime.markrootFreeGStacks",
	"runtime.markrootSpans",
	"runtime.scanobject",
	"runtime.scanObject",
	"runtime.scanObjectSmall",
	"runtime.scanObjectsSmall",
	"runtime.scanSpan",
	"runtime.scanblock",
	"runtime.scanstack",
	"runtime.scanframeworker",
	"runtime.scanConservative",
	"runtime.greyobject",
	"runtime.shade",
	"runtime.findObject",
	"runtime.tryDeferToSpanScan",
	"runtime.spanSetScans",
	"runtime.newSpanSPMC",
	"runtime.freeDeadSpanSPMCs",
	"runtime.(*mspan).typePointersOf",
	"runtime.(*mspan).typePointersOfUnchecked",
	"runtime.(*mspan).typePointersOfType",
	"runtime.(*mspan).heapBitsSmallForAddr",
	"runtime.(*mspan).moveInlineMarks",
	"runtime.getempty",
	"runtime.putempty",
	"runtime.putfull",
	"runtime.trygetfull",
	"runtime.handoff",
	"runtime.prepareFreeWorkbufs",
	"runtime.freeSomeWbufs",
	"runtime.shrinkstack",
	"runtime.freeStackSpans",
	"runtime.clearpools",
	"runtime.startCheckmarks",
	"runtime.endCheckmarks",
	"runtime.setCheckmark",
	"runtime.runCheckmark",
	"runtime.stopTheWorldGC",
	"runtime.startTheWorldGC",
	"runtime.forcegchelper",
	"runtime.allGsSnapshotSortedForGC",
	"runtime.findGoroutineLeaks",
	"runtime.findMaybeRunnableGoroutines",
	// sweep
	"runtime.bgsweep",
	"runtime.sweepone",
	"runtime.deductSweepCredit",
	"runtime.finishsweep_m",
	"runtime.(*mheap).reclaim",
	"runtime.(*mheap).reclaimChunk",
	"runtime.(*mheap).nextSpanForSweep",
	"runtime.(*mspan).ensureSwept",
	"runtime.(*mspan).reportZombies",
	"runtime.(*mcache).prepareForSweep",
	"runtime.flushallmcaches",
	"runtime.flushmcache",
	"runtime.newMarkBits",
	"runtime.newAllocBits",
	"runtime.nextMarkBitArenaEpoch",
	// scavenge
	"runtime.bgscavenge",
	"runtime.(*pageAlloc).scavenge",
	"runtime.(*pageAlloc).scavengeOne",
	"runtime.(*mheap).scavengeAll",
	"runtime.(*pallocData).findScavengeCandidate",
	"runtime.(*scavengeIndex).find",
	"runtime.(*scavengeIndex).nextGen",
	"runtime.(*scavengeIndex).setEmpty",
	"runtime.printScavTrace",
}

var gcPrefixes = []string{
	"runtime.(*gcWork).",
	"runtime.(*gcControllerState).",
	"runtime.(*gcCPULimiterState).",
	"runtime.(*limiterEvent).",
	"runtime.(*sweepLocked).",
	"runtime.(*sweepLocker).",
	"runtime.(*activeSweep).",
	"runtime.(*spanQueue).",
	"runtime.(*spanSPMC).",
	"runtime.(*spanInlineMarkBits).",
	"runtime.(*stackScanState).",
	"runtime.(*scavengerState).",
	"runtime.typePointers.",
	"internal/runtime/gc/scan.", // Green Tea span scanning kernels
}

// IsMachineLayer reports whether name is a function of Shortbread's
// machine layer (runtime-patches/): runtime.sbXxx or a method of a
// runtime.sbXxx type. The classifier puts them in Other.
func IsMachineLayer(name string) bool {
	name = strings.TrimSuffix(name, ".abi0")
	for _, p := range []string{"runtime.sb", "runtime.(*sb"} {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" && unicode.IsUpper(rune(rest[0])) {
			return true
		}
	}
	return false
}

// FuncClass applies the function-level rules to a function name. It
// reports the class and whether a rule matched; machine-layer functions
// match with class Other.
func FuncClass(name string) (Class, bool) {
	name = strings.TrimSuffix(name, ".abi0")
	switch {
	case IsMachineLayer(name):
		return Other, true
	case matchExact(name, prologueFuncs):
		return Prologue, true
	case matchExact(name, writeBarrierFuncs) || matchPrefix(name, writeBarrierPrefixes):
		return WriteBarrier, true
	case IsCheckPanic(name) || matchExact(name, safetyFuncs):
		return Safety, true
	case isGCFunc(name):
		return GC, true
	}
	return Other, false
}

// IsCheckPanic reports whether name is a helper that generated code calls
// when a bounds, nil, divide, shift or type-assertion check fails.
func IsCheckPanic(name string) bool {
	name = strings.TrimSuffix(name, ".abi0")
	return matchExact(name, checkPanicFuncs) || matchPrefix(name, checkPanicPrefixes)
}

func isGCFunc(name string) bool {
	if rest, ok := strings.CutPrefix(name, "runtime.gc"); ok && rest != "" &&
		unicode.IsUpper(rune(rest[0])) && !strings.HasPrefix(rest, "WriteBarrier") {
		return true
	}
	return matchExact(name, gcFuncs) || matchPrefix(name, gcPrefixes)
}

func isMorestack(name string) bool {
	return strings.HasPrefix(strings.TrimSuffix(name, ".abi0"), "runtime.morestack")
}

// isWBCallee reports whether generated code calls name from the
// write-barrier path of a flag test.
func isWBCallee(name string) bool {
	name = strings.TrimSuffix(name, ".abi0")
	return strings.HasPrefix(name, "runtime.gcWriteBarrier") || name == "runtime.wbZero" ||
		name == "runtime.wbMove" || name == "runtime.atomicwb" ||
		strings.HasPrefix(name, "runtime.bulkBarrierPreWrite")
}

// matchExact reports whether name is one of list or a closure of one.
func matchExact(name string, list []string) bool {
	for _, f := range list {
		if name == f || (strings.HasPrefix(name, f) && name[len(f)] == '.') {
			return true
		}
	}
	return false
}

func matchPrefix(name string, list []string) bool {
	for _, p := range list {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// qualify gives an assembly-local symbol ("gcWriteBarrier",
// "expandAVX512_1") its package path, taken from the directory of its
// source file below a GOROOT or module "src/" directory.
func qualify(name, file string) string {
	if strings.ContainsAny(name, "./") || file == "" {
		return name
	}
	i := strings.LastIndex(file, "/src/")
	j := strings.LastIndex(file, "/")
	if i < 0 || j <= i+5 {
		return name
	}
	return file[i+5:j] + "." + name
}
