/*
 * h_layout: a program with an unusual memory layout, which execve must
 * load (t_proc runs it in several builds). 4 MiB of read-only data and
 * 9 MiB of bss together span ~13 MiB from 4 MiB up: the whole span must
 * be mappable (a kernel image in the lower half once refused it with
 * ENOEXEC). TLS with initialised and zero parts (memsz != filesz), RELRO
 * and, in the h_layout64k build, 64 KiB segment alignment. It checks its
 * own memory and exits 0 only if every byte is what the ELF file said.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char ro[4 << 20] = {1, 2, 3};
char bss[9 << 20];
char data[4096] = "initialised data";
__thread int tls_init = 42;
__thread char tls_zero[256];
static const char *const relro_ptr = "relro"; /* a pointer: lands in .data.rel.ro */

int main(void)
{
	int bad = 0;
	if (ro[0] != 1 || ro[1] != 2 || ro[2] != 3 || ro[(4 << 20) - 1] != 0)
		bad |= 1;
	for (size_t i = 0; i < sizeof bss; i += 4096)
		if (bss[i])
			bad |= 2;
	bss[sizeof bss - 1] = 7;
	if (bss[sizeof bss - 1] != 7)
		bad |= 2;
	if (strcmp(data, "initialised data") != 0)
		bad |= 4;
	if (tls_init != 42)
		bad |= 8;
	for (size_t i = 0; i < sizeof tls_zero; i++)
		if (tls_zero[i])
			bad |= 8;
	if (strcmp(relro_ptr, "relro") != 0)
		bad |= 16;
	if (bad)
		printf("h_layout: bad %#x\n", bad);
	return bad;
}
