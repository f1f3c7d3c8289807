// An Extism plugin in C against the extism:host/env imports directly,
// freestanding (no libc): clang --target=wasm32 -nostdlib
// -Wl,--no-entry. Its exports: reverse (the input reversed), count (a
// var counting calls), cfg (the config value named by the input), no
// (an error).
#include <stdint.h>

#define IMPORT(n) __attribute__((import_module("extism:host/env"), import_name(n)))
#define EXPORT(n) __attribute__((export_name(n)))

IMPORT("input_length") uint64_t input_length(void);
IMPORT("input_load_u8") uint8_t input_load_u8(uint64_t);
IMPORT("alloc") uint64_t alloc(uint64_t);
IMPORT("length") uint64_t length(uint64_t);
IMPORT("load_u8") uint8_t load_u8(uint64_t);
IMPORT("store_u8") void store_u8(uint64_t, uint8_t);
IMPORT("output_set") void output_set(uint64_t, uint64_t);
IMPORT("error_set") void error_set(uint64_t);
IMPORT("var_get") uint64_t var_get(uint64_t);
IMPORT("var_set") void var_set(uint64_t, uint64_t);
IMPORT("config_get") uint64_t config_get(uint64_t);

static uint64_t put(const char *s, uint64_t n) {
	uint64_t p = alloc(n);
	for (uint64_t i = 0; i < n; i++)
		store_u8(p + i, (uint8_t)s[i]);
	return p;
}

static uint64_t cstrlen(const char *s) {
	uint64_t n = 0;
	while (s[n])
		n++;
	return n;
}

EXPORT("reverse") int32_t reverse(void) {
	uint64_t n = input_length();
	uint64_t p = alloc(n);
	for (uint64_t i = 0; i < n; i++)
		store_u8(p + n - 1 - i, input_load_u8(i));
	output_set(p, n);
	return 0;
}

EXPORT("count") int32_t count(void) {
	uint64_t v = var_get(put("calls", 5));
	uint8_t c = v ? load_u8(v) : 0;
	c++;
	var_set(put("calls", 5), put((const char *)&c, 1));
	char digits[4];
	int k = 0;
	if (c >= 100) digits[k++] = '0' + c / 100;
	if (c >= 10) digits[k++] = '0' + (c / 10) % 10;
	digits[k++] = '0' + c % 10;
	output_set(put(digits, k), k);
	return 0;
}

EXPORT("cfg") int32_t cfg(void) {
	uint64_t n = input_length();
	uint64_t key = alloc(n);
	for (uint64_t i = 0; i < n; i++)
		store_u8(key + i, input_load_u8(i));
	uint64_t v = config_get(key);
	if (!v) {
		const char *unset = "<unset>";
		output_set(put(unset, cstrlen(unset)), cstrlen(unset));
		return 0;
	}
	output_set(v, length(v));
	return 0;
}

EXPORT("no") int32_t no(void) {
	const char *msg = "c says no";
	error_set(put(msg, cstrlen(msg)));
	return 2;
}
