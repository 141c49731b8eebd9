/* The array ubench's "touch" mode reads, in one of three shapes chosen at
 * build time (see user/build.sh):
 *   BLOB_DATA  BLOB_SIZE bytes of initialized, non-zero data (.data: the
 *              pages come from the program file)
 *   BLOB_BSS   BLOB_SIZE bytes of zeros (.bss: nothing in the file, pages
 *              are zero-filled on demand)
 * With BLOB_SIZE 0 (the plain "hello"-sized program) the array is one
 * byte. */
#ifndef BLOB_SIZE
#define BLOB_SIZE 0
#endif
	.globl ubench_blob, ubench_blob_size
	.section .rodata
	.balign 8
ubench_blob_size:
	.quad BLOB_SIZE
#if defined(BLOB_DATA)
	.data
	.balign 4096
ubench_blob:
	.fill BLOB_SIZE, 1, 0x5a
#else
	.bss
	.balign 4096
ubench_blob:
	.skip BLOB_SIZE + 1
#endif
	.section .note.GNU-stack, "", @progbits
