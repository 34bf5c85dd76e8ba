package runtime

import "unsafe"

// The Go runtime's own break: memory past the heap it has handed out, which the Go allocator
// never reuses once taken from it.
//
//go:linkname sbrk runtime.sbrk
func sbrk(n uintptr) unsafe.Pointer

// cabiReallocAdapter gives the WASI preview1 adapter its memory (its state and its stack). The
// adapter asks during _initialize, from inside the Go runtime's own start-up (the runtime reads
// the clock before its heap exists), so the memory cannot come from the Go heap; it comes from the
// runtime's break instead, is never freed, and is asked for twice per instance. wit-component
// hands this export to the adapter in place of cabi_realloc when the module has it (and the
// component is made without --realloc-via-memory-grow, which would grow memory behind Go's back).
//
//go:wasmexport cabi_realloc_adapter
func cabiReallocAdapter(old unsafe.Pointer, oldSize, align, newSize uintptr) unsafe.Pointer {
	if align == 0 {
		align = 1
	}
	p := uintptr(sbrk(newSize + align))
	if p == 0 {
		return nil
	}
	return unsafe.Pointer((p + align - 1) &^ (align - 1))
}
