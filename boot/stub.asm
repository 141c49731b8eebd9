; Shortbread boot stub: GRUB's multiboot2 kernel.
;
; GRUB loads this small image as the "kernel" and the Go kernel ELF as the
; first module2 (see grub.cfg). The stub runs in 32-bit protected mode with
; paging off, as multiboot2 (spec §3.3) leaves it, and:
;   1. checks the multiboot2 magic and that the CPU has long mode and NX;
;   2. copies the Go ELF's PT_LOAD segments to physical memory: the Go
;      kernel is linked in the top 2 GiB of the address space (at
;      KERNEL_VBASE + 16 MiB), so a segment at virtual address V goes to
;      physical V - KERNEL_VBASE (16 MiB and up, far above where GRUB puts
;      modules); the whole lower half is then left to user programs;
;   3. builds identity page tables for the low 4 GiB, leaving page 0 unmapped
;      so nil dereferences fault, and maps the first GiB again at
;      KERNEL_VBASE for the kernel image;
;   4. enters long mode, turns on SSE (Go code needs it from the first
;      instruction) and jumps to the ELF entry with RDI = multiboot2 info,
;      RSI/RDX = the kernel module, RCX = the stub's end, R8 = the TSC at
;      the first instruction, R9/R10 = the AP trampoline code and length.
; Any failure prints a line on COM1 and halts: there is nothing to return to.

bits 32

extern stub_begin, stub_end

MB2_MAGIC       equ 0xE85250D6
MB2_BOOT_MAGIC  equ 0x36d76289
COM1            equ 0x3f8
; The kernel image's virtual base, in the top 2 GiB (the x86-64 "kernel"
; code model): virtual KERNEL_VBASE + P is physical P. Only its high
; dword and the low dword's top bit are set, so the 32-bit code below
; checks and strips it with two comparisons and a subtraction.
KERNEL_VBASE_HI equ 0xffffffff
KERNEL_VBASE_LO equ 0x80000000

section .multiboot2 progbits alloc noexec nowrite align=8
mb2_header:
    dd MB2_MAGIC
    dd 0                                   ; i386 protected mode
    dd mb2_header_end - mb2_header
    dd -(MB2_MAGIC + 0 + (mb2_header_end - mb2_header))
    align 8
    ; Module alignment tag: ask GRUB for page-aligned modules.
    dw 6, 0
    dd 8
    align 8
    ; Framebuffer tag (optional, no preferred mode): without it GRUB on
    ; UEFI hands over no framebuffer ("no console will be available to
    ; OS"); with it GRUB keeps the firmware's GOP mode (gfxpayload=keep
    ; in grub.cfg) and describes it, and under BIOS still reports VGA
    ; text mode, for the kernel's screen console.
    dw 5, 1
    dd 20
    dd 0, 0, 0                             ; width, height, depth: any
    align 8
    dw 0, 0                                ; end tag
    dd 8
mb2_header_end:

section .text
global _start
_start:
    mov esi, eax                           ; magic (RDTSC clobbers EAX)
    rdtsc                                  ; boot-time benchmark starts here
    cli
    cld
    mov [start_tsc], eax
    mov [start_tsc + 4], edx
    mov esp, stack_top
    mov [mbi_addr], ebx
    mov [boot_magic], esi
    call serial_init

    cmp dword [boot_magic], MB2_BOOT_MAGIC
    jne .bad_magic

    ; Long mode present? (CPUID 0x80000001 EDX bit 29)
    mov eax, 0x80000000
    cpuid
    cmp eax, 0x80000001
    jb .no_long
    mov eax, 0x80000001
    cpuid
    test edx, 1 << 29
    jz .no_long
    ; NX (EDX bit 20): EFER.NXE and the page tables' no-execute bits need
    ; it; firmware setup can hide it ("Execute Disable Bit").
    test edx, 1 << 20
    jz .no_nx

    call find_module
    test eax, eax
    jz .no_module
    call load_elf
    test eax, eax
    jnz .fail                              ; eax = message pointer

    call build_page_tables

    ; PAE on, then CR3, then EFER.LME|NXE, then paging.
    mov eax, cr4
    or eax, (1 << 5)
    mov cr4, eax
    mov eax, pml4
    mov cr3, eax
    mov ecx, 0xC0000080
    rdmsr
    or eax, (1 << 8) | (1 << 11)
    wrmsr
    mov eax, cr0
    or eax, (1 << 31) | (1 << 16) | 1      ; PG, WP, PE
    mov cr0, eax

    lgdt [gdt64_ptr]
    jmp 0x08:long_entry

.bad_magic:
    mov eax, msg_magic
    jmp .fail
.no_long:
    mov eax, msg_nolong
    jmp .fail
.no_nx:
    mov eax, msg_nonx
    jmp .fail
.no_module:
    mov eax, msg_nomodule
.fail:
    mov esi, eax
    call serial_puts
.halt:
    hlt
    jmp .halt

; serial_init programs COM1 for 115200 8N1 so failures can be reported.
serial_init:
    mov dx, COM1 + 1
    xor al, al
    out dx, al                             ; no interrupts
    mov dx, COM1 + 3
    mov al, 0x80
    out dx, al                             ; DLAB
    mov dx, COM1
    mov al, 1
    out dx, al                             ; divisor 1 = 115200
    mov dx, COM1 + 1
    xor al, al
    out dx, al
    mov dx, COM1 + 3
    mov al, 3
    out dx, al                             ; 8N1
    mov dx, COM1 + 2
    mov al, 0xC7
    out dx, al                             ; FIFO on
    ret

; serial_puts writes the NUL-terminated string at ESI.
serial_puts:
.next:
    lodsb
    test al, al
    jz .done
    mov ah, al
    mov dx, COM1 + 5
.wait:
    in al, dx
    test al, 0x20
    jz .wait
    mov dx, COM1
    mov al, ah
    out dx, al
    jmp .next
.done:
    ret

; find_module returns in EAX the start of the first module (0 if none) and
; stores its bounds in mod_start/mod_end.
find_module:
    mov ebx, [mbi_addr]
    lea ecx, [ebx + 8]                     ; first tag
    mov edx, ebx
    add edx, [ebx]                         ; end of info
.tag:
    cmp ecx, edx
    jae .none
    mov eax, [ecx]                         ; type
    test eax, eax
    jz .none
    cmp eax, 3
    je .found
    mov eax, [ecx + 4]                     ; size
    add eax, 7
    and eax, ~7
    add ecx, eax
    jmp .tag
.found:
    mov eax, [ecx + 8]
    mov [mod_start], eax
    mov ebx, [ecx + 12]
    mov [mod_end], ebx
    ret
.none:
    xor eax, eax
    ret

; load_elf copies the ELF64 at [mod_start] into place. Returns EAX = 0 on
; success or a message pointer.
load_elf:
    mov ebx, [mod_start]
    cmp dword [ebx], 0x464c457f            ; "\x7fELF"
    jne .notelf
    cmp byte [ebx + 4], 2                  ; ELFCLASS64
    jne .notelf
    cmp word [ebx + 18], 0x3e              ; EM_X86_64
    jne .notelf
    mov eax, [ebx + 24]                    ; e_entry, in the kernel's top 2 GiB
    mov [elf_entry], eax
    mov eax, [ebx + 28]
    mov [elf_entry + 4], eax
    cmp eax, KERNEL_VBASE_HI
    jne .toohigh
    cmp dword [ebx + 24], KERNEL_VBASE_LO
    jb .toohigh
    mov esi, [ebx + 32]                    ; e_phoff
    add esi, ebx
    movzx ecx, word [ebx + 56]             ; e_phnum
.ph:
    test ecx, ecx
    jz .ok
    cmp dword [esi], 1                     ; PT_LOAD
    jne .skip
    ; Refuse segments outside the kernel's top 2 GiB, or whose physical
    ; copy would overlap the module, the multiboot info or this stub:
    ; copying would destroy them. (The Go linker sets p_paddr = p_vaddr.)
    cmp dword [esi + 28], KERNEL_VBASE_HI
    jne .toohigh
    cmp dword [esi + 24], KERNEL_VBASE_LO
    jb .toohigh
    cmp dword [esi + 44], 0
    jne .toohigh
    mov edi, [esi + 24]                    ; p_paddr - KERNEL_VBASE: physical
    sub edi, KERNEL_VBASE_LO
    mov eax, edi
    add eax, [esi + 40]                    ; end = paddr + memsz
    jc .toohigh
    cmp edi, [mod_end]
    jae .above_mod
    cmp eax, [mod_start]
    ja .overlap
.above_mod:
    cmp edi, stub_end
    jae .above_stub
    cmp eax, stub_begin
    ja .overlap
.above_stub:
    mov edx, [mbi_addr]
    cmp edi, edx
    jae .check_mbi_end
    cmp eax, edx
    ja .overlap
    jmp .copy
.check_mbi_end:
    add edx, [edx]
    cmp edi, edx
    jb .overlap
.copy:
    push ecx
    push esi
    mov edx, esi
    mov ecx, [edx + 32]                    ; p_filesz
    mov esi, [edx + 8]                     ; p_offset
    add esi, [mod_start]
    rep movsb
    mov ecx, [edx + 40]                    ; p_memsz - p_filesz zeroed
    sub ecx, [edx + 32]
    xor al, al
    rep stosb
    pop esi
    pop ecx
.skip:
    add esi, 56
    dec ecx
    jmp .ph
.ok:
    xor eax, eax
    ret
.notelf:
    mov eax, msg_notelf
    ret
.toohigh:
    mov eax, msg_toohigh
    ret
.overlap:
    mov eax, msg_overlap
    ret

; build_page_tables identity-maps 0..4 GiB: 2 MiB pages except the first
; 2 MiB, which uses 4 KiB pages so that page 0 can stay unmapped.
build_page_tables:
    mov edi, pml4
    mov ecx, (4096 * 8) / 4
    xor eax, eax
    rep stosd
    mov dword [pml4], pdpt + 3
    ; KERNEL_VBASE: PML4 slot 511, PDPT slot 510 -> the first GiB's table.
    mov dword [pml4 + 511 * 8], pdpt_hi + 3
    mov dword [pdpt_hi + 510 * 8], pd0 + 3
    mov eax, pd0 + 3
    mov [pdpt], eax
    add eax, 4096
    mov [pdpt + 8], eax
    add eax, 4096
    mov [pdpt + 16], eax
    add eax, 4096
    mov [pdpt + 24], eax
    ; 2048 PD entries across pd0..pd3, each a 2 MiB page.
    mov edi, pd0
    mov eax, 0x83                          ; present, writable, huge
    xor edx, edx                           ; high half of the address
    mov ecx, 2048
.pde:
    mov [edi], eax
    mov [edi + 4], edx
    add eax, 0x200000
    adc edx, 0
    add edi, 8
    loop .pde
    ; First 2 MiB through pt0, page 0 left not-present.
    mov dword [pd0], pt0 + 3
    mov edi, pt0 + 8
    mov eax, 0x1000 + 3
    mov ecx, 511
.pte:
    mov [edi], eax
    add eax, 0x1000
    add edi, 8
    loop .pte
    ret

bits 64
long_entry:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor ax, ax
    mov fs, ax
    mov gs, ax
    ; SSE: CR0.EM=0, MP=1, NE=1; CR4.OSFXSR, OSXMMEXCPT.
    mov rax, cr0
    and rax, ~(1 << 2)
    or rax, (1 << 1) | (1 << 5)
    mov cr0, rax
    mov rax, cr4
    or rax, (1 << 9) | (1 << 10)
    mov cr4, rax
    mov edi, [mbi_addr]
    mov esi, [mod_start]
    mov edx, [mod_end]
    mov ecx, stub_end
    mov r8, [start_tsc]
    mov r9d, ap_trampoline
    mov r10d, ap_trampoline_end - ap_trampoline
    mov rax, [elf_entry]
    jmp rax

; The application-processor start-up code. The Go kernel copies it to a
; free page below 1 MiB it picks from the memory map (GRUB may have put
; modules anywhere, so no fixed address is safe) and sends STARTUP IPIs
; naming that page. It is position-independent: it runs with CS = the
; page's segment and finds everything relative to EBX = the page's linear
; address. Real mode -> protected mode -> long mode on the kernel's page
; tables (CR3 from the parameter block at +0xF00), then it jumps to the Go
; kernel's AP entry with RSP = the CPU's trap stack, RDI = CPU index,
; R14 = its g.
%define OFF(x) ((x) - ap_trampoline)
bits 16
ap_trampoline:
    cli
    cld
    mov ax, cs
    mov ds, ax
    mov ss, ax
    mov sp, 0xF00                          ; a small stack below the parameters
    movzx ebx, ax
    shl ebx, 4
    lea eax, [ebx + OFF(ap_gdt)]
    mov [OFF(ap_gdt_ptr) + 2], eax
    ; The far pointer to the 64-bit code, used once paging is on (the page
    ; is then read-only, so no stack).
    lea eax, [ebx + OFF(ap_long)]
    mov [OFF(ap_long_ptr)], eax
    lgdt [OFF(ap_gdt_ptr)]
    mov eax, cr0
    or eax, 1
    mov cr0, eax
    push dword 0x08
    lea eax, [ebx + OFF(ap_protected)]
    push eax
    o32 retf
bits 32
ap_protected:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    lea esp, [ebx + 0xF00]
    mov eax, cr4
    or eax, (1 << 5) | (1 << 9) | (1 << 10) ; PAE, OSFXSR, OSXMMEXCPT
    mov cr4, eax
    mov eax, [ebx + 0xF00]
    mov cr3, eax
    mov ecx, 0xC0000080
    rdmsr
    or eax, (1 << 8) | (1 << 11)            ; LME, NXE
    wrmsr
    mov eax, cr0
    and eax, ~(1 << 2)                      ; EM off
    or eax, (1 << 31) | (1 << 16) | (1 << 5) | (1 << 1) ; PG, WP, NE, MP
    mov cr0, eax
    jmp far [ebx + OFF(ap_long_ptr)]
bits 64
ap_long:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov rsp, [rbx + 0xF10]
    mov rdi, [rbx + 0xF18]
    mov r14, [rbx + 0xF20]
    mov rax, [rbx + 0xF08]
    jmp rax
align 8
ap_gdt:
    dq 0
    dq 0x00CF9A000000FFFF                  ; 0x08: 32-bit code
    dq 0x00CF92000000FFFF                  ; 0x10: data
    dq 0x00AF9A000000FFFF                  ; 0x18: 64-bit code
ap_gdt_ptr:
    dw ap_gdt_ptr - ap_gdt - 1
    dd 0                                   ; patched: linear address of ap_gdt
ap_long_ptr:
    dd 0                                   ; patched: linear address of ap_long
    dw 0x18
ap_trampoline_end:

section .rodata
msg_magic:    db "shortbread: not booted by a multiboot2 loader (bad magic); halting", 13, 10, 0
msg_nolong:   db "shortbread: this CPU has no 64-bit long mode; halting", 13, 10, 0
msg_nonx:     db "shortbread: this CPU has no NX (execute-disable) bit; enable it in the firmware setup; halting", 13, 10, 0
msg_nomodule: db "shortbread: no kernel module (check grub.cfg module2 line); halting", 13, 10, 0
msg_notelf:   db "shortbread: kernel module is not an x86-64 ELF; halting", 13, 10, 0
msg_toohigh:  db "shortbread: kernel ELF not linked at 0xffffffff80000000 + its physical address (tools/build-kernel.sh -T); halting", 13, 10, 0
msg_overlap:  db "shortbread: kernel ELF segment overlaps the boot stub, module or boot info; halting", 13, 10, 0

align 8
gdt64:
    dq 0
    dq 0x00AF9A000000FFFF                  ; 0x08: 64-bit code
    dq 0x00CF92000000FFFF                  ; 0x10: data
gdt64_ptr:
    dw gdt64_ptr - gdt64 - 1
    dd gdt64

section .data
mbi_addr:   dd 0
boot_magic: dd 0
mod_start:  dd 0
mod_end:    dd 0
align 8
elf_entry:  dq 0
start_tsc:  dq 0

section .bss
align 4096
pml4: resb 4096
pdpt: resb 4096
pd0:  resb 4096 * 4
pt0:  resb 4096
pdpt_hi: resb 4096
stack: resb 16384
stack_top:
