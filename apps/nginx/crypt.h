/*
 * Shortbread: a stand-in <crypt.h> for building nginx with Debian's musl.
 *
 * Debian's musl-dev ships no <crypt.h> and its libc.a has no crypt(), but
 * nginx's src/os/unix/ngx_linux_config.h includes <crypt.h>
 * unconditionally. nginx is configured --without-http_auth_basic_module,
 * the only caller of crypt() (NGX_CRYPT stays undefined), so a declaration
 * is all that is needed and nothing links against it.
 * apps/nginx/build.sh copies this file into nginx's objs/ directory, which
 * is on the compiler's include path.
 */
#ifndef SHORTBREAD_CRYPT_H
#define SHORTBREAD_CRYPT_H
char *crypt(const char *key, const char *salt);
#endif
