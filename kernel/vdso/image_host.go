//go:build !shortbread

package vdso

// image is empty outside the kernel: tools/build-kernel.sh compiles
// vdso.c and adds the library as image_shortbread.go through the build
// overlay.
const image = ""
