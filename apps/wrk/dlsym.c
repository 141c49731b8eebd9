/*
 * Shortbread: dlsym() for the static musl wrk binary.
 *
 * wrk embeds its Lua half (src/wrk.lua) as LuaJIT bytecode in the
 * symbol luaJIT_BC_wrk and loads it with `require "wrk"`; LuaJIT's
 * package loader finds such modules with dlsym(RTLD_DEFAULT,
 * "luaJIT_BC_<name>") (lib_package.c). In a static musl binary dlsym()
 * always fails, so require fails and wrk panics ("attempt to index a nil
 * value"). This object, linked ahead of libc.a, takes the place of musl's
 * dlsym and answers for the one symbol wrk needs; every other lookup fails
 * as it would with musl's own static dlsym (only LuaJIT's ffi.C lookups
 * could ask, and wrk does not use them).
 */
#include <stddef.h>
#include <string.h>

extern const char luaJIT_BC_wrk[];

void *dlsym(void *restrict handle, const char *restrict name)
{
	(void)handle;
	if (strcmp(name, "luaJIT_BC_wrk") == 0)
		return (void *)luaJIT_BC_wrk;
	return NULL;
}
