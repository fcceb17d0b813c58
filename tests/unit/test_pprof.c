/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests of the pprof writer (pprof.c): the protobuf encoding against the byte sequences
 * of the protobuf encoding documentation (protobuf.dev, "Encoding": 150 as 08 96 01, the
 * string "testing", an embedded message, a packed field), varint edges, the string table, and
 * whole profiles gunzipped (zlib) and walked by a decoder written here from the wire format.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "test.h"
#include "out/pprof.h"

static bool bytes_are(const struct pb_buf *b, const char *hex)
{
	size_t n = strlen(hex) / 2;
	unsigned int byte;

	if (b->failed || b->len != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		sscanf(hex + 2 * i, "%2x", &byte);
		if (b->p[i] != byte)
			return false;
	}
	return true;
}

static void varint_edges(void)
{
	static const struct {
		uint64_t v;
		const char *hex;
	} cases[] = {
		{0, "00"},
		{1, "01"},
		{127, "7f"},
		{128, "8001"},
		{150, "9601"},
		{300, "ac02"},
		{16383, "ff7f"},
		{16384, "808001"},
		{UINT32_MAX, "ffffffff0f"},
		{1ULL << 63, "80808080808080808001"},
		/* int64 -1 is ten bytes, as protobuf encodes negative int64 */
		{UINT64_MAX, "ffffffffffffffffff01"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pb_buf b = {0};

		pb_varint(&b, cases[i].v);
		if (!bytes_are(&b, cases[i].hex)) {
			fprintf(stderr, "varint %llu: wrong bytes\n",
				(unsigned long long)cases[i].v);
			EXPECT(0);
		}
		pb_free(&b);
	}
}

static void fields_as_documented(void)
{
	struct pb_buf b = {0}, inner = {0};
	static const uint64_t packed[] = {3, 270, 86942};

	pb_field_varint(&b, 1, 150);
	EXPECT(bytes_are(&b, "089601"));
	b.len = 0;
	pb_field_bytes(&b, 2, "testing", 7);
	EXPECT(bytes_are(&b, "120774657374696e67"));
	b.len = 0;
	/* A message in a message: field 3 holding {1: 150}. */
	pb_field_varint(&inner, 1, 150);
	pb_field_bytes(&b, 3, inner.p, inner.len);
	EXPECT(bytes_are(&b, "1a03089601"));
	b.len = 0;
	pb_field_packed(&b, 4, packed, 3);
	EXPECT(bytes_are(&b, "2206038e029ea705"));
	b.len = 0;
	/* Field numbers past 15 take a two-byte tag; an empty packed field is still there. */
	pb_field_varint(&b, 16, 1);
	EXPECT(bytes_are(&b, "800101"));
	b.len = 0;
	pb_field_packed(&b, 1, packed, 0);
	EXPECT(bytes_are(&b, "0a00"));
	pb_free(&b);
	pb_free(&inner);
}

static void string_table(void)
{
	struct pb_strtab t;
	char name[32];

	EXPECT_EQ_U64(pb_strtab_init(&t), 0);
	EXPECT_EQ_U64(t.n, 1);
	EXPECT_EQ_U64(t.len[0], 0);
	EXPECT_EQ_U64(pb_str(&t, "", 0), 0);
	EXPECT_EQ_U64(pb_str(&t, "a", 1), 1);
	EXPECT_EQ_U64(pb_str(&t, "b", 1), 2);
	EXPECT_EQ_U64(pb_str(&t, "a", 1), 1);
	/* Bytes, not C strings: an embedded NUL makes another string. */
	EXPECT_EQ_U64(pb_str(&t, "a\0b", 3), 3);
	EXPECT_EQ_U64(pb_str(&t, "a", 1), 1);
	/* Past the first hash size: every string keeps its index. */
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		EXPECT_EQ_U64(pb_str(&t, name, strlen(name)), 4 + (uint64_t)i);
	}
	for (int i = 4999; i >= 0; i -= 7) {
		snprintf(name, sizeof(name), "s%d", i);
		EXPECT_EQ_U64(pb_str(&t, name, strlen(name)), 4 + (uint64_t)i);
	}
	EXPECT_EQ_U64(t.n, 5004);
	EXPECT(!t.failed);
	pb_strtab_free(&t);
}

/* ---- a decoder of the wire format, for reading whole profiles back ---- */

struct field {
	uint32_t num;
	unsigned int wt;
	uint64_t v; /* varint */
	const unsigned char *p;
	size_t len; /* length-delimited */
};

static bool get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 70 && *p < end; shift += 7) {
		unsigned char c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* The next field of [*p, end); false at the end or on bad input (counted as a failure). */
static bool next_field(const unsigned char **p, const unsigned char *end, struct field *f)
{
	uint64_t tag;

	if (*p >= end)
		return false;
	if (!get_varint(p, end, &tag))
		goto bad;
	f->num = (uint32_t)(tag >> 3);
	f->wt = tag & 7;
	if (f->wt == 0) {
		if (get_varint(p, end, &f->v))
			return true;
		goto bad;
	}
	if (f->wt != 2 || !get_varint(p, end, &f->v) || f->v > (uint64_t)(end - *p))
		goto bad;
	f->p = *p;
	f->len = f->v;
	*p += f->len;
	return true;
bad:
	EXPECT(0);
	return false;
}

#define MAXN 64

struct decoded {
	char strings[MAXN][64];
	int nstrings;
	int nsamples, nmappings, nlocations, nfunctions;
	uint64_t sample_values[MAXN][2];
	uint64_t sample_locs[MAXN][8];
	int sample_nlocs[MAXN];
	uint64_t sample_label_str[MAXN][3]; /* string ids of the string labels' values */
	uint64_t pid[MAXN];
	uint64_t loc_function[MAXN + 1]; /* by location id: function id (0: none) */
	uint64_t loc_mapping[MAXN + 1];	 /* by location id */
	uint64_t loc_addr[MAXN + 1];
	uint64_t function_name[MAXN + 1]; /* by function id: string id */
	uint64_t mapping_file[MAXN + 1], mapping_build_id[MAXN + 1];
	uint64_t mapping_start[MAXN + 1], mapping_limit[MAXN + 1], mapping_has_functions[MAXN + 1];
	uint64_t nsample_types, default_sample_type, duration, period;
};

static void decode_packed(const struct field *f, uint64_t *out, int *n)
{
	const unsigned char *p = f->p, *end = f->p + f->len;

	*n = 0;
	while (p < end && *n < 8)
		EXPECT(get_varint(&p, end, &out[(*n)++]));
}

static void decode_sample(struct decoded *d, const struct field *sf)
{
	const unsigned char *p = sf->p, *end = sf->p + sf->len;
	int i = d->nsamples++, nlabels = 0;
	struct field f;

	while (next_field(&p, end, &f)) {
		if (f.num == 1) {
			decode_packed(&f, d->sample_locs[i], &d->sample_nlocs[i]);
		} else if (f.num == 2) {
			int n;

			decode_packed(&f, d->sample_values[i], &n);
			EXPECT_EQ_U64(n, d->nsample_types);
		} else if (f.num == 3) {
			const unsigned char *q = f.p, *qend = f.p + f.len;
			struct field lf;
			uint64_t key = 0, str = 0, num = 0;

			while (next_field(&q, qend, &lf))
				if (lf.num == 1)
					key = lf.v;
				else if (lf.num == 2)
					str = lf.v;
				else if (lf.num == 3)
					num = lf.v;
			if (str && nlabels < 3)
				d->sample_label_str[i][nlabels++] = str;
			else if (key && !str)
				d->pid[i] = num;
		}
	}
}

/* A message of id-indexed fields: the values of fields 1..8 (varints). */
static uint64_t decode_flat(const struct field *mf, uint64_t v[9], uint64_t *line_function)
{
	const unsigned char *p = mf->p, *end = mf->p + mf->len;
	struct field f;

	memset(v, 0, 9 * sizeof(*v));
	while (next_field(&p, end, &f)) {
		if (f.wt == 0 && f.num <= 8) {
			v[f.num] = f.v;
		} else if (f.wt == 2 && line_function) {
			uint64_t lv[9];

			decode_flat(&f, lv, NULL);
			*line_function = lv[1];
		}
	}
	return v[1] <= MAXN ? v[1] : 0;
}

static void decode(const unsigned char *gz, size_t gzlen, struct decoded *d)
{
	unsigned char *raw = malloc(1 << 20);
	z_stream z = {0};
	const unsigned char *p, *end;
	struct field f;

	memset(d, 0, sizeof(*d));
	EXPECT(gzlen >= 2 && gz[0] == 0x1f && gz[1] == 0x8b);
	EXPECT(inflateInit2(&z, 15 + 16) == Z_OK);
	z.next_in = (unsigned char *)gz;
	z.avail_in = (uInt)gzlen;
	z.next_out = raw;
	z.avail_out = 1 << 20;
	EXPECT(inflate(&z, Z_FINISH) == Z_STREAM_END);
	inflateEnd(&z);
	p = raw;
	end = raw + z.total_out;
	while (next_field(&p, end, &f)) {
		uint64_t v[9], line_function = 0, id;

		switch (f.num) {
		case 1:
			d->nsample_types++;
			break;
		case 2:
			if (d->nsamples < MAXN)
				decode_sample(d, &f);
			break;
		case 3:
			id = decode_flat(&f, v, NULL);
			d->nmappings++;
			d->mapping_start[id] = v[2];
			d->mapping_limit[id] = v[3];
			d->mapping_file[id] = v[5];
			d->mapping_build_id[id] = v[6];
			d->mapping_has_functions[id] = v[7];
			break;
		case 4:
			id = decode_flat(&f, v, &line_function);
			d->nlocations++;
			d->loc_mapping[id] = v[2];
			d->loc_addr[id] = v[3];
			d->loc_function[id] = line_function;
			break;
		case 5:
			id = decode_flat(&f, v, NULL);
			d->nfunctions++;
			d->function_name[id] = v[2];
			break;
		case 6:
			if (d->nstrings < MAXN) {
				EXPECT(f.len < sizeof(d->strings[0]));
				memcpy(d->strings[d->nstrings], f.p, f.len < 63 ? f.len : 63);
				d->nstrings++;
			}
			break;
		case 10:
			d->duration = f.v;
			break;
		case 12:
			d->period = f.v;
			break;
		case 14:
			d->default_sample_type = f.v;
			break;
		}
	}
	free(raw);
}

/* The name of sample i's location j (leaf first). */
static const char *loc_name(const struct decoded *d, int i, int j)
{
	uint64_t loc = d->sample_locs[i][j];

	if (loc > MAXN || !d->loc_function[loc])
		return "(none)";
	return d->strings[d->function_name[d->loc_function[loc]]];
}

/* ---- whole profiles ---- */

static struct stack_frame frame(const char *name, enum frame_type type, const char *dso,
				uint64_t addr)
{
	struct stack_frame f = {
		.name = (char *)name, .type = type, .dso = (char *)dso, .addr = addr};

	if (dso) {
		f.build_id_len = 3;
		memcpy(f.build_id, "\xab\x01\xff", 3);
	}
	return f;
}

static unsigned char *write_profile(const struct stack_record *recs, int n,
				    const struct pprof_opts *o, size_t *len)
{
	char *doc = NULL;
	FILE *f = open_memstream(&doc, len);

	EXPECT(f != NULL);
	EXPECT_EQ_U64(pprof_write(f, recs, n, o), 0);
	fclose(f);
	return (unsigned char *)doc;
}

static void whole_profile(void)
{
	/* Two stacks of one process sharing main and the kernel's fault entry, and one of
	 * another process without a comm, whose frame in the file has no symbol. */
	struct stack_frame a[] = {
		frame("app", FRAME_PROCESS, NULL, 0),
		frame("main", FRAME_USER, "/bin/app", 0x1100),
		frame("touch", FRAME_USER, "/bin/app", 0x1200),
		frame("exc_page_fault", FRAME_KERNEL, NULL, 0xffffffff81000010ULL),
		frame("[write minor anon]", FRAME_FAULT, NULL, 0),
	};
	struct stack_frame b[] = {
		frame("app", FRAME_PROCESS, NULL, 0),
		frame("main", FRAME_USER, "/bin/app", 0x1100),
		frame("exc_page_fault", FRAME_KERNEL, NULL, 0xffffffff81000010ULL),
		frame("[read major]", FRAME_FAULT, NULL, 0),
	};
	struct stack_frame c[] = {
		frame("[unknown]", FRAME_OTHER, NULL, 0),
		frame("app+0x1300", FRAME_USER, "/bin/app", 0x1300),
		frame("[truncated]", FRAME_OTHER, NULL, 0),
		frame("[read minor]", FRAME_FAULT, NULL, 0),
	};
	struct stack_record recs[] = {
		{.frames = a, .nframes = 5, .pid = 42, .count = 7, .latency_ns = 7000},
		{.frames = b, .nframes = 4, .pid = 42, .count = 2, .latency_ns = 90000},
		{.frames = c, .nframes = 4, .pid = 43, .count = 1, .latency_ns = 0},
		/* no events: no sample */
		{.frames = b, .nframes = 4, .pid = 44, .count = 0, .latency_ns = 0},
	};
	static const unsigned char kid[] = {0x12, 0x34};
	struct pprof_opts o = {
		.events = "faults",
		.unit = "count",
		.latency = true,
		.default_latency = true,
		.class_label = "fault_class",
		.duration_nanos = 1500000000,
		.kernel_build_id = kid,
		.kernel_build_id_len = 2,
		.comment = {"mmscope test"},
	};
	struct decoded *d = calloc(1, sizeof(*d));
	size_t len;
	unsigned char *gz = write_profile(recs, 4, &o, &len);
	int kernel_map = 0, app_map = 0;

	decode(gz, len, d);
	EXPECT_STREQ(d->strings[0], "");
	EXPECT_EQ_U64(d->nsample_types, 2);
	EXPECT_STREQ(d->strings[d->default_sample_type], "latency");
	EXPECT_EQ_U64(d->duration, 1500000000);
	EXPECT_EQ_U64(d->nsamples, 3);
	/* Leaf first; the process and the fault class are labels, not locations. */
	EXPECT_EQ_U64(d->sample_nlocs[0], 3);
	EXPECT_STREQ(loc_name(d, 0, 0), "exc_page_fault");
	EXPECT_STREQ(loc_name(d, 0, 1), "touch");
	EXPECT_STREQ(loc_name(d, 0, 2), "main");
	EXPECT_EQ_U64(d->sample_values[0][0], 7);
	EXPECT_EQ_U64(d->sample_values[0][1], 7000);
	EXPECT_STREQ(d->strings[d->sample_label_str[0][0]], "write minor anon");
	EXPECT_STREQ(d->strings[d->sample_label_str[0][1]], "app");
	EXPECT_EQ_U64(d->pid[0], 42);
	/* Shared frames are one location. */
	EXPECT_EQ_U64(d->sample_locs[1][0], d->sample_locs[0][0]);
	EXPECT_EQ_U64(d->sample_locs[1][1], d->sample_locs[0][2]);
	EXPECT_STREQ(d->strings[d->sample_label_str[1][0]], "read major");
	EXPECT_EQ_U64(d->sample_values[1][1], 90000);
	/* No comm: no comm label; an unsymbolized frame has an address and no function. */
	EXPECT_EQ_U64(d->pid[2], 43);
	EXPECT_EQ_U64(d->sample_label_str[2][1], 0);
	EXPECT_EQ_U64(d->sample_nlocs[2], 2);
	EXPECT_STREQ(loc_name(d, 2, 0), "[truncated]");
	EXPECT_STREQ(loc_name(d, 2, 1), "(none)");
	EXPECT_EQ_U64(d->loc_addr[d->sample_locs[2][1]], 0x1300);
	/* exc_page_fault, touch, main, [truncated]; locations: those and app+0x1300. */
	EXPECT_EQ_U64(d->nfunctions, 4);
	EXPECT_EQ_U64(d->nlocations, 5);
	EXPECT_EQ_U64(d->nmappings, 2);
	for (int m = 1; m <= 2; m++) {
		if (strcmp(d->strings[d->mapping_file[m]], PPROF_KERNEL_MAPPING) == 0)
			kernel_map = m;
		if (strcmp(d->strings[d->mapping_file[m]], "/bin/app") == 0)
			app_map = m;
	}
	EXPECT(kernel_map && app_map);
	/* The program is the main binary, mapping[0], though the kernel's frames came first. */
	EXPECT_EQ_U64(app_map, 1);
	EXPECT_EQ_U64(d->loc_mapping[d->sample_locs[0][0]], kernel_map);
	EXPECT_EQ_U64(d->loc_mapping[d->sample_locs[0][1]], app_map);
	EXPECT_STREQ(d->strings[d->mapping_build_id[kernel_map]], "1234");
	EXPECT_EQ_U64(d->mapping_start[kernel_map], 0xffffffff81000010ULL);
	EXPECT_EQ_U64(d->mapping_limit[kernel_map], 0xffffffff81000011ULL);
	EXPECT_EQ_U64(d->mapping_has_functions[kernel_map], 1);
	EXPECT_STREQ(d->strings[d->mapping_build_id[app_map]], "ab01ff");
	EXPECT_EQ_U64(d->mapping_start[app_map], 0);
	EXPECT_EQ_U64(d->mapping_limit[app_map], 0x1301);
	/* One frame of the file has no symbol: a symbolizer may name its locations. */
	EXPECT_EQ_U64(d->mapping_has_functions[app_map], 0);
	free(gz);
	free(d);
}

static void empty_profile(void)
{
	struct pprof_opts o = {.events = "invalidations", .unit = "count", .class_label = "x"};
	struct decoded *d = calloc(1, sizeof(*d));
	size_t len;
	unsigned char *gz = write_profile(NULL, 0, &o, &len);

	decode(gz, len, d);
	EXPECT_EQ_U64(d->nsamples, 0);
	EXPECT_EQ_U64(d->nsample_types, 1);
	EXPECT_STREQ(d->strings[0], "");
	EXPECT_STREQ(d->strings[1], "invalidations");
	EXPECT_STREQ(d->strings[d->default_sample_type], "invalidations");
	EXPECT_EQ_U64(d->period, 1);
	free(gz);
	/* --sample 16: one stack taken in 16 events, the period of every sample. */
	memset(d, 0, sizeof(*d));
	o.period = 16;
	gz = write_profile(NULL, 0, &o, &len);
	decode(gz, len, d);
	EXPECT_EQ_U64(d->period, 16);
	free(gz);
	free(d);
}

/* Names from the traced processes become valid UTF-8, as in --folded. */
static void hostile_names(void)
{
	struct stack_frame f[] = {
		frame("a\xff\nb", FRAME_PROCESS, NULL, 0),
		frame("f;g\\", FRAME_USER, "/tmp/\x01lib", 0x10),
		frame("[read minor]", FRAME_FAULT, NULL, 0),
	};
	struct stack_record r = {.frames = f, .nframes = 3, .pid = 1, .count = 1};
	struct pprof_opts o = {.events = "faults",
			       .unit = "count",
			       .class_label = "c",
			       .comment = {"cmd \x80;\\\n"}};
	struct decoded *d = calloc(1, sizeof(*d));
	size_t len;
	unsigned char *gz = write_profile(&r, 1, &o, &len);
	bool comm = false, fn = false, file = false, comment = false;

	decode(gz, len, d);
	for (int i = 0; i < d->nstrings; i++) {
		comm |= strcmp(d->strings[i], "a\\xff\\x0ab") == 0;
		fn |= strcmp(d->strings[i], "f\\x3bg\\x5c") == 0;
		file |= strcmp(d->strings[i], "/tmp/\\x01lib") == 0;
		comment |= strcmp(d->strings[i], "cmd \\x80;\\\\x0a") == 0;
		for (const char *c = d->strings[i]; *c; c++)
			EXPECT((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x80);
	}
	EXPECT(comm && fn && file && comment);
	free(gz);
	free(d);
}

/* A full device: an error, not a silent short file. */
static void write_error(void)
{
	struct pprof_opts o = {.events = "faults", .unit = "count", .class_label = "x"};
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		return;
	EXPECT(pprof_write(f, NULL, 0, &o) < 0);
	fclose(f);
}

TEST_MAIN(T(varint_edges), T(fields_as_documented), T(string_table), T(whole_profile),
	  T(empty_profile), T(hostile_names), T(write_error))
