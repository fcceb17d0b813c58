/* SPDX-License-Identifier: GPL-2.0 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "utf8_oracle.h"

size_t oracle_utf8_char(const unsigned char *p, size_t avail)
{
	static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
	uint32_t cp;
	size_t n, i;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool oracle_valid_utf8(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		n = oracle_utf8_char(p + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

char *oracle_decoded(const char *s, size_t len, size_t *outlen)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	char *out = malloc(len * 4 + 1);
	size_t i = 0, o = 0, n;

	if (!out)
		return NULL;
	while (i < len) {
		n = oracle_utf8_char(p + i, len - i);
		if (n) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[p[i] >> 4];
		out[o++] = hex[p[i] & 0xf];
		i++;
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}
