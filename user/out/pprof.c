// SPDX-License-Identifier: GPL-2.0
/*
 * pprof writer (what goes where: pprof.h). The message is built in memory, then gzipped to the
 * file in one pass. Field numbers are those of the public profile.proto
 * (github.com/google/pprof, proto/profile.proto); every field is proto3 (a varint, or
 * length-delimited bytes), so a small encoder does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/escape.h"
#include "lib/keyed_table.h"
#include "out/pprof.h"

/* Wire types. */
#define WT_VARINT 0
#define WT_LEN	  2

/* Profile */
#define PROFILE_SAMPLE_TYPE	    1
#define PROFILE_SAMPLE		    2
#define PROFILE_MAPPING		    3
#define PROFILE_LOCATION	    4
#define PROFILE_FUNCTION	    5
#define PROFILE_STRING_TABLE	    6
#define PROFILE_TIME_NANOS	    9
#define PROFILE_DURATION_NANOS	    10
#define PROFILE_PERIOD_TYPE	    11
#define PROFILE_PERIOD		    12
#define PROFILE_COMMENT		    13
#define PROFILE_DEFAULT_SAMPLE_TYPE 14
/* ValueType */
#define VALUE_TYPE_TYPE 1
#define VALUE_TYPE_UNIT 2
/* Sample */
#define SAMPLE_LOCATION_ID 1
#define SAMPLE_VALUE	   2
#define SAMPLE_LABEL	   3
/* Label */
#define LABEL_KEY 1
#define LABEL_STR 2
#define LABEL_NUM 3
/* Mapping */
#define MAPPING_ID	      1
#define MAPPING_MEMORY_START  2
#define MAPPING_MEMORY_LIMIT  3
#define MAPPING_FILE_OFFSET   4
#define MAPPING_FILENAME      5
#define MAPPING_BUILD_ID      6
#define MAPPING_HAS_FUNCTIONS 7
/* Location */
#define LOCATION_ID	    1
#define LOCATION_MAPPING_ID 2
#define LOCATION_ADDRESS    3
#define LOCATION_LINE	    4
/* Line */
#define LINE_FUNCTION_ID 1
/* Function */
#define FUNCTION_ID	     1
#define FUNCTION_NAME	     2
#define FUNCTION_SYSTEM_NAME 3

/* ---- encoding ---- */

static void pb_add(struct pb_buf *b, const void *data, size_t len)
{
	if (b->failed)
		return;
	if (len > b->cap - b->len) {
		size_t cap = b->cap ? b->cap : 256;
		unsigned char *np;

		while (cap - b->len < len) {
			if (cap > SIZE_MAX / 2) {
				b->failed = true;
				return;
			}
			cap *= 2;
		}
		np = realloc(b->p, cap);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
}

void pb_varint(struct pb_buf *b, uint64_t v)
{
	unsigned char out[10];
	size_t n = 0;

	do {
		out[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	pb_add(b, out, n);
}

static void pb_tag(struct pb_buf *b, uint32_t field, unsigned int wire_type)
{
	pb_varint(b, (uint64_t)field << 3 | wire_type);
}

void pb_field_varint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	pb_tag(b, field, WT_VARINT);
	pb_varint(b, v);
}

void pb_field_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len)
{
	pb_tag(b, field, WT_LEN);
	pb_varint(b, len);
	pb_add(b, data, len);
}

void pb_field_packed(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n)
{
	struct pb_buf tmp = {0};

	for (size_t i = 0; i < n; i++)
		pb_varint(&tmp, v[i]);
	if (tmp.failed)
		b->failed = true;
	else
		pb_field_bytes(b, field, tmp.p, tmp.len);
	pb_free(&tmp);
}

/* A nested message: its encoding, as a length-delimited field; msg is emptied for reuse. */
static void pb_field_message(struct pb_buf *b, uint32_t field, struct pb_buf *msg)
{
	if (msg->failed)
		b->failed = true;
	else
		pb_field_bytes(b, field, msg->p, msg->len);
	msg->len = 0;
	msg->failed = false;
}

void pb_free(struct pb_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- the string table ---- */

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

static int strtab_rehash(struct pb_strtab *t, size_t nhead)
{
	uint32_t *head = calloc(nhead, sizeof(*head));

	if (!head)
		return -ENOMEM;
	free(t->head);
	t->head = head;
	t->nhead = nhead;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = str_hash(t->s[i], t->len[i]) & (nhead - 1);

		t->next[i] = head[h];
		head[h] = (uint32_t)(i + 1);
	}
	return 0;
}

int pb_strtab_init(struct pb_strtab *t)
{
	memset(t, 0, sizeof(*t));
	if (strtab_rehash(t, 1024))
		return -ENOMEM;
	pb_str(t, "", 0);
	return t->failed ? -ENOMEM : 0;
}

uint64_t pb_str(struct pb_strtab *t, const char *s, size_t len)
{
	size_t h;
	char *copy;

	if (t->failed)
		return 0;
	h = str_hash(s, len) & (t->nhead - 1);
	for (uint32_t i = t->head[h]; i; i = t->next[i - 1])
		if (t->len[i - 1] == len && memcmp(t->s[i - 1], s, len) == 0)
			return i - 1;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		char **ns = realloc(t->s, cap * sizeof(*ns));
		size_t *nl = ns ? realloc(t->len, cap * sizeof(*nl)) : NULL;
		uint32_t *nn = nl ? realloc(t->next, cap * sizeof(*nn)) : NULL;

		if (ns)
			t->s = ns;
		if (nl)
			t->len = nl;
		if (!nn || cap > UINT32_MAX) {
			t->failed = true;
			return 0;
		}
		t->next = nn;
		t->cap = cap;
	}
	copy = malloc(len + 1);
	if (!copy) {
		t->failed = true;
		return 0;
	}
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->s[t->n] = copy;
	t->len[t->n] = len;
	t->next[t->n] = t->head[h];
	t->head[h] = (uint32_t)(t->n + 1);
	t->n++;
	/* Chains of about one string: twice the heads when they are outnumbered. */
	if (t->n > t->nhead && strtab_rehash(t, t->nhead * 2))
		t->failed = true;
	return t->n - 1;
}

void pb_strtab_free(struct pb_strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->len);
	free(t->next);
	free(t->head);
	memset(t, 0, sizeof(*t));
}

static uint64_t pb_cstr(struct pb_strtab *t, const char *s)
{
	return pb_str(t, s, strlen(s));
}

/* ---- mappings, functions, locations: each distinct one once, ids from 1 ---- */

/* Far more than any run has; a full table fails the write (-ENOMEM), never a wrong id. */
#define PPROF_TABLE_MAX (1u << 26)

struct mapping_entry {
	uint64_t filename, build_id; /* key: string ids */
	uint64_t id;
	uint64_t lo, hi;	      /* addresses seen */
	uint64_t events, last_sample; /* of the samples through it */
	bool kernel, unsymbolized;
	bool not_main; /* a library or pseudo-file: never the main binary */
};

struct function_entry {
	uint64_t name, mapping_id; /* key */
	uint64_t id;
};

struct location_entry {
	uint64_t mapping_id, addr, function_id; /* key (function_id 0: no function) */
	uint64_t id;
};

struct pprof {
	const struct pprof_opts *o;
	struct pb_strtab st;
	struct keyed_table mappings, functions, locations;
	/* The entries by id - 1, for writing them in order. */
	struct mapping_entry **mapping_by_id;
	struct function_entry **function_by_id;
	struct location_entry **location_by_id;
	size_t cap_m, cap_f, cap_l;
	uint64_t nsample, sample_events; /* the sample being written: its number, its events */
	bool failed;
};

/*
 * A name from the traced processes (comm, symbol, path, command line), shown as in --folded:
 * control characters, invalid UTF-8, ';' and '\\' as \xNN. profile.proto's strings are proto3
 * strings, which readers (Go's protobuf, python3-protobuf) refuse unless valid UTF-8.
 */
static uint64_t name_str(struct pprof *pp, const char *s, size_t len)
{
	char *e = folded_escape(s, len);
	uint64_t id;

	if (!e) {
		pp->failed = true;
		return 0;
	}
	id = pb_cstr(&pp->st, e);
	free(e);
	return id;
}

/* A line of text (a comment: the command line among others): valid UTF-8 the same way, but ';'
 * and '\\' as they are, since no frame is split there. */
static uint64_t text_str(struct pprof *pp, const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t len = strlen(s), n = 0;
	char *e = malloc(4 * len + 1);
	uint64_t id;

	if (!e) {
		pp->failed = true;
		return 0;
	}
	for (size_t i = 0; i < len;) {
		const unsigned char *c = (const unsigned char *)s + i;
		size_t k = utf8_seq_len(c, len - i);

		if (k && *c >= 0x20 && *c != 0x7f) {
			memcpy(e + n, c, k);
			n += k;
			i += k;
			continue;
		}
		e[n++] = '\\';
		e[n++] = 'x';
		e[n++] = digits[*c >> 4];
		e[n++] = digits[*c & 15];
		i++;
	}
	id = pb_str(&pp->st, e, n);
	free(e);
	return id;
}

/* Append ptr to the (*arr, *cap) array at index id - 1. */
static bool by_id_add(void ***arr, size_t *cap, uint64_t id, void *ptr)
{
	if (id > *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		void **na = realloc(*arr, ncap * sizeof(*na));

		if (!na)
			return false;
		*arr = na;
		*cap = ncap;
	}
	(*arr)[id - 1] = ptr;
	return true;
}

/*
 * The entry of key in t, a new one with the next id when it had none. keyed_table moves its
 * entries as it grows, so the pointers of the by-id arrays are good only until then: they
 * are taken again after every insertion that grew it.
 */
static void *table_get(struct pprof *pp, struct keyed_table *t, const void *key, void ***by_id,
		       size_t *cap, bool *created)
{
	unsigned char *old = t->e;
	uint64_t *e = ktable_get(t, key, created);

	if (!e) {
		pp->failed = true;
		return NULL;
	}
	if (*created) {
		/* The id follows the key's words. */
		uint64_t *id = (uint64_t *)((unsigned char *)e + t->key_size);

		*id = t->n;
		if (!by_id_add(by_id, cap, *id, e)) {
			pp->failed = true;
			return NULL;
		}
	}
	if (t->e != old) {
		for (size_t i = 0; i < t->cap; i++) {
			unsigned char *ent = ktable_at(t, i);

			if (ent)
				(*by_id)[*(uint64_t *)(ent + t->key_size) - 1] = ent;
		}
	}
	return e;
}

static void hex(const unsigned char *id, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = '\0';
}

/* A shared object (libc.so.6, ld-linux-x86-64.so.2, libfoo.so) or a pseudo-file ([vdso]). */
static bool not_main(const char *filename)
{
	const char *base = strrchr(filename, '/'), *so;

	base = base ? base + 1 : filename;
	if (base[0] == '[')
		return true;
	for (so = strstr(base, ".so"); so; so = strstr(so + 1, ".so"))
		if (so[3] == '\0' || so[3] == '.')
			return true;
	return false;
}

static struct mapping_entry *get_mapping(struct pprof *pp, const char *filename,
					 const unsigned char *build_id, size_t build_id_len,
					 bool kernel)
{
	char idhex[2 * 64 + 1];
	struct mapping_entry key = {0}, *m;
	bool created;

	if (build_id_len > 64)
		build_id_len = 0;
	hex(build_id, build_id_len, idhex);
	key.filename = name_str(pp, filename, strlen(filename));
	key.build_id = pb_cstr(&pp->st, idhex);
	m = table_get(pp, &pp->mappings, &key, (void ***)&pp->mapping_by_id, &pp->cap_m, &created);
	if (m && created) {
		m->kernel = kernel;
		m->not_main = kernel || not_main(filename);
		m->lo = UINT64_MAX;
	}
	return m;
}

static uint64_t get_function(struct pprof *pp, const char *name, uint64_t mapping_id)
{
	struct function_entry key = {.name = name_str(pp, name, strlen(name)),
				     .mapping_id = mapping_id};
	struct function_entry *f;
	bool created;

	f = table_get(pp, &pp->functions, &key, (void ***)&pp->function_by_id, &pp->cap_f,
		      &created);
	return f ? f->id : 0;
}

static uint64_t get_location(struct pprof *pp, uint64_t mapping_id, uint64_t addr,
			     uint64_t function_id)
{
	struct location_entry key = {
		.mapping_id = mapping_id, .addr = addr, .function_id = function_id};
	struct location_entry *l;
	bool created;

	l = table_get(pp, &pp->locations, &key, (void ***)&pp->location_by_id, &pp->cap_l,
		      &created);
	return l ? l->id : 0;
}

/* A user frame that kept the name of its place ("libc.so.6+0x2a1f0", stacks.c): no symbol. */
static bool unsymbolized(const struct stack_frame *f)
{
	const char *base = strrchr(f->dso, '/');
	char name[64];
	size_t blen;

	base = base ? base + 1 : f->dso;
	blen = strlen(base);
	if (strncmp(f->name, base, blen) != 0)
		return false;
	snprintf(name, sizeof(name), "+0x%llx", (unsigned long long)f->addr);
	return strcmp(f->name + blen, name) == 0;
}

/* The location of one frame (0: none, pp->failed says why). */
static uint64_t frame_location(struct pprof *pp, const struct stack_frame *f)
{
	const struct pprof_opts *o = pp->o;
	struct mapping_entry *m = NULL;
	uint64_t mapping_id = 0, function_id = 0, id;

	if (f->type == FRAME_KERNEL)
		m = get_mapping(pp, PPROF_KERNEL_MAPPING, o->kernel_build_id,
				o->kernel_build_id_len, true);
	else if (f->type == FRAME_USER && f->dso)
		m = get_mapping(pp, f->dso, f->build_id, f->build_id_len, false);
	if (pp->failed)
		return 0;
	if (m) {
		mapping_id = m->id;
		if (m->last_sample != pp->nsample) {
			m->last_sample = pp->nsample;
			m->events += pp->sample_events;
		}
		if (f->addr < m->lo)
			m->lo = f->addr;
		if (f->addr > m->hi)
			m->hi = f->addr;
	}
	if (m && !m->kernel && unsymbolized(f))
		m->unsymbolized = true;
	else
		function_id = get_function(pp, f->name, mapping_id);
	if (pp->failed)
		return 0;
	id = get_location(pp, mapping_id, m ? f->addr : 0, function_id);
	/* Mapped frames all have an address; the others are told apart by function. */
	return id;
}

static void add_label_str(struct pprof *pp, struct pb_buf *sample, struct pb_buf *label,
			  const char *key, const char *value, size_t len)
{
	pb_field_varint(label, LABEL_KEY, pb_cstr(&pp->st, key));
	pb_field_varint(label, LABEL_STR, name_str(pp, value, len));
	pb_field_message(sample, SAMPLE_LABEL, label);
}

static void write_sample(struct pprof *pp, struct pb_buf *out, const struct stack_record *r,
			 uint64_t *locs, struct pb_buf *sample, struct pb_buf *label)
{
	const struct pprof_opts *o = pp->o;
	uint64_t values[2] = {r->count, r->latency_ns};
	size_t nlocs = 0;
	int lo = 1, hi = r->nframes - 1;

	if (r->nframes < 1)
		return;
	if (r->frames[hi].type != FRAME_FAULT && r->frames[hi].type != FRAME_TLB)
		hi++;
	pp->nsample++;
	pp->sample_events = r->count;
	for (int i = hi - 1; i >= lo; i--) {
		uint64_t id = frame_location(pp, &r->frames[i]);

		if (!id)
			return;
		locs[nlocs++] = id;
	}
	pb_field_packed(sample, SAMPLE_LOCATION_ID, locs, nlocs);
	pb_field_packed(sample, SAMPLE_VALUE, values, o->latency ? 2 : 1);
	if (hi < r->nframes) {
		/* "[write minor anon]" is labelled "write minor anon". */
		const char *kind = r->frames[hi].name;
		size_t len = strlen(kind), plen = o->class_prefix ? strlen(o->class_prefix) : 0;

		if (len >= 2 && kind[0] == '[' && kind[len - 1] == ']') {
			kind++;
			len -= 2;
		}
		if (plen && len >= plen && strncmp(kind, o->class_prefix, plen) == 0) {
			kind += plen;
			len -= plen;
		}
		add_label_str(pp, sample, label, o->class_label, kind, len);
	}
	if (r->frames[0].type == FRAME_PROCESS)
		add_label_str(pp, sample, label, "comm", r->frames[0].name,
			      strlen(r->frames[0].name));
	/* pid 0: processes gone, merged by command (core/stack_table.h): no one pid. */
	if (r->pid) {
		pb_field_varint(label, LABEL_KEY, pb_cstr(&pp->st, "pid"));
		pb_field_varint(label, LABEL_NUM, r->pid);
		pb_field_message(sample, SAMPLE_LABEL, label);
	}
	pb_field_message(out, PROFILE_SAMPLE, sample);
}

static void write_value_type(struct pprof *pp, struct pb_buf *out, uint32_t field,
			     struct pb_buf *msg, const char *type, const char *unit)
{
	pb_field_varint(msg, VALUE_TYPE_TYPE, pb_cstr(&pp->st, type));
	pb_field_varint(msg, VALUE_TYPE_UNIT, pb_cstr(&pp->st, unit));
	pb_field_message(out, field, msg);
}

/*
 * profile.proto: "mapping[0] will be the main binary" (pprof's reports show it as the File).
 * The main binary is taken to be the program with the most events in its stacks, libraries,
 * the kernel and pseudo-files aside: the command of a run, the busiest program of a host. It
 * gets id 1, the ids before it move up by one.
 */
static uint64_t main_mapping(const struct pprof *pp)
{
	const struct mapping_entry *best = NULL;

	for (size_t i = 0; i < pp->mappings.n; i++) {
		const struct mapping_entry *m = pp->mapping_by_id[i];

		if (!m->not_main && (!best || m->events > best->events))
			best = m;
	}
	return best ? best->id : 0;
}

static uint64_t mapping_out_id(uint64_t id, uint64_t main_id)
{
	return id == main_id ? 1 : id < main_id ? id + 1 : id;
}

static void write_tables(struct pprof *pp, struct pb_buf *out, struct pb_buf *msg,
			 struct pb_buf *line)
{
	uint64_t main_id = main_mapping(pp);

	for (size_t k = 0; k < pp->mappings.n; k++) {
		/* The main binary, then the others in their order. */
		size_t i = !main_id ? k : k == 0 ? main_id - 1 : k <= main_id - 1 ? k - 1 : k;
		const struct mapping_entry *m = pp->mapping_by_id[i];
		uint64_t start = m->kernel ? m->lo : 0;

		pb_field_varint(msg, MAPPING_ID, mapping_out_id(m->id, main_id));
		pb_field_varint(msg, MAPPING_MEMORY_START, start);
		pb_field_varint(msg, MAPPING_MEMORY_LIMIT, m->hi + 1);
		pb_field_varint(msg, MAPPING_FILE_OFFSET, start);
		pb_field_varint(msg, MAPPING_FILENAME, m->filename);
		pb_field_varint(msg, MAPPING_BUILD_ID, m->build_id);
		pb_field_varint(msg, MAPPING_HAS_FUNCTIONS, !m->unsymbolized);
		pb_field_message(out, PROFILE_MAPPING, msg);
	}
	for (size_t i = 0; i < pp->locations.n; i++) {
		const struct location_entry *l = pp->location_by_id[i];

		pb_field_varint(msg, LOCATION_ID, l->id);
		if (l->mapping_id) {
			pb_field_varint(msg, LOCATION_MAPPING_ID,
					mapping_out_id(l->mapping_id, main_id));
			pb_field_varint(msg, LOCATION_ADDRESS, l->addr);
		}
		if (l->function_id) {
			pb_field_varint(line, LINE_FUNCTION_ID, l->function_id);
			pb_field_message(msg, LOCATION_LINE, line);
		}
		pb_field_message(out, PROFILE_LOCATION, msg);
	}
	for (size_t i = 0; i < pp->functions.n; i++) {
		const struct function_entry *f = pp->function_by_id[i];

		pb_field_varint(msg, FUNCTION_ID, f->id);
		pb_field_varint(msg, FUNCTION_NAME, f->name);
		pb_field_varint(msg, FUNCTION_SYSTEM_NAME, f->name);
		pb_field_message(out, PROFILE_FUNCTION, msg);
	}
}

/* The Profile message of recs into out. */
static void encode(struct pprof *pp, struct pb_buf *out, const struct stack_record *recs, int n)
{
	const struct pprof_opts *o = pp->o;
	struct pb_buf msg = {0}, label = {0};
	uint64_t *locs = NULL;
	int maxframes = 0;

	write_value_type(pp, out, PROFILE_SAMPLE_TYPE, &msg, o->events, o->unit);
	if (o->latency)
		write_value_type(pp, out, PROFILE_SAMPLE_TYPE, &msg, "latency", "nanoseconds");
	for (int i = 0; i < n; i++)
		if (recs[i].nframes > maxframes)
			maxframes = recs[i].nframes;
	locs = malloc(((size_t)maxframes + 1) * sizeof(*locs));
	if (!locs)
		pp->failed = true;
	for (int i = 0; i < n && !pp->failed; i++)
		if (recs[i].count)
			write_sample(pp, out, &recs[i], locs, &msg, &label);
	free(locs);
	if (!pp->failed)
		write_tables(pp, out, &msg, &label);
	for (int i = 0; i < 4 && o->comment[i]; i++)
		pb_field_varint(out, PROFILE_COMMENT, text_str(pp, o->comment[i]));
	pb_field_varint(out, PROFILE_TIME_NANOS, o->time_nanos);
	pb_field_varint(out, PROFILE_DURATION_NANOS, o->duration_nanos);
	/* Events counted one by one: a period of 1 event; with --sample N, one stack taken in N
	 * events, and the values already multiplied by N (as perf's sample period). */
	write_value_type(pp, out, PROFILE_PERIOD_TYPE, &msg, o->events, o->unit);
	pb_field_varint(out, PROFILE_PERIOD, o->period ? o->period : 1);
	/* Said even for the first type: without it, pprof shows the last. */
	pb_field_varint(out, PROFILE_DEFAULT_SAMPLE_TYPE,
			pb_cstr(&pp->st, o->latency && o->default_latency ? "latency" : o->events));
	/* Last: every string is known by now. */
	for (size_t i = 0; i < pp->st.n; i++)
		pb_field_bytes(out, PROFILE_STRING_TABLE, pp->st.s[i], pp->st.len[i]);
	if (pp->st.failed || msg.failed || label.failed)
		pp->failed = true;
	pb_free(&msg);
	pb_free(&label);
}

/* gzip, as every pprof reader expects (and Go's profile.Parse detects). */
static int gzip_write(FILE *f, const unsigned char *data, size_t len)
{
	unsigned char chunk[65536];
	z_stream z = {0};
	int ret;

	errno = 0;
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)data;
	do {
		size_t step = len > (1u << 30) ? (1u << 30) : len;

		z.avail_in = (uInt)step;
		len -= step;
		do {
			size_t have;

			z.next_out = chunk;
			z.avail_out = sizeof(chunk);
			ret = deflate(&z, len ? Z_NO_FLUSH : Z_FINISH);
			if (ret == Z_STREAM_ERROR) {
				deflateEnd(&z);
				return -EIO;
			}
			have = sizeof(chunk) - z.avail_out;
			if (have && fwrite(chunk, 1, have, f) != have) {
				deflateEnd(&z);
				return errno ? -errno : -EIO;
			}
		} while (z.avail_out == 0);
	} while (len);
	deflateEnd(&z);
	if (fflush(f) || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

int pprof_write(FILE *f, const struct stack_record *recs, int n, const struct pprof_opts *o)
{
	struct pprof pp = {
		.o = o,
		.mappings =
			KEYED_TABLE(struct mapping_entry, 2 * sizeof(uint64_t), PPROF_TABLE_MAX),
		.functions =
			KEYED_TABLE(struct function_entry, 2 * sizeof(uint64_t), PPROF_TABLE_MAX),
		.locations =
			KEYED_TABLE(struct location_entry, 3 * sizeof(uint64_t), PPROF_TABLE_MAX),
	};
	struct pb_buf out = {0};
	int err = 0;

	if (pb_strtab_init(&pp.st))
		pp.failed = true;
	else
		encode(&pp, &out, recs, n);
	if (pp.failed || out.failed)
		err = -ENOMEM;
	else
		err = gzip_write(f, out.p, out.len);
	pb_free(&out);
	pb_strtab_free(&pp.st);
	ktable_free(&pp.mappings);
	ktable_free(&pp.functions);
	ktable_free(&pp.locations);
	free(pp.mapping_by_id);
	free(pp.function_by_id);
	free(pp.location_by_id);
	return err;
}
