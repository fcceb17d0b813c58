// SPDX-License-Identifier: GPL-2.0
/*
 * Flame graph SVG writer (see svg.h for the layout rules). The stacks become a tree (one node
 * per distinct prefix), which is laid out in two walks: the first finds the depth of the
 * deepest frame wide enough to draw (the picture's height), the second writes the frames.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "out/svg.h"

#define XPAD	   10.0
#define TITLE_Y	   26
#define SUB_Y0	   48
#define SUB_STEP   16
#define LEGEND_GAP 10
#define BOTTOM_PAD 12

struct fnode {
	const struct stack_frame *frame; /* NULL: the root, "all" */
	uint64_t count, latency_ns;
	struct fnode *child, *last, *next;
};

struct flame {
	FILE *f;
	const struct flame_opts *o;
	struct fnode *nodes;
	size_t nnodes;
	uint64_t total; /* the root's weight */
	double scale;	/* pixels per unit of weight */
	int max_depth;	/* of the deepest drawn frame (root: 0) */
	int graph_bottom;
	bool used[FRAME_TYPES];
	bool fault_used[5]; /* legend: write, read, exec, unknown access, incomplete */
};

static uint64_t weight(const struct flame *fl, const struct fnode *n)
{
	return fl->o->latency ? n->latency_ns : n->count;
}

static uint64_t rec_weight(const struct flame_opts *o, const struct stack_record *r)
{
	return o->latency ? r->latency_ns : r->count;
}

static int cmp_frame(const struct stack_frame *a, const struct stack_frame *b)
{
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	return (a->type > b->type) - (a->type < b->type);
}

static int cmp_rec(const void *pa, const void *pb)
{
	const struct stack_record *a = pa, *b = pb;
	int n = a->nframes < b->nframes ? a->nframes : b->nframes;

	for (int i = 0; i < n; i++) {
		int c = cmp_frame(&a->frames[i], &b->frames[i]);

		if (c)
			return c;
	}
	return (a->nframes > b->nframes) - (a->nframes < b->nframes);
}

/*
 * The tree of the stacks, from the stacks in sorted order (a shallow copy of the records is
 * sorted; the nodes point to the caller's frames): a new frame is either the last child of its
 * parent (same prefix as the previous stack) or a new last child.
 */
static int build_tree(struct flame *fl, const struct stack_record *recs, int n)
{
	struct stack_record *sorted;
	size_t frames = 1;
	struct fnode *root;

	for (int i = 0; i < n; i++)
		frames += (size_t)(recs[i].nframes < FLAME_MAX_DEPTH ? recs[i].nframes
								     : FLAME_MAX_DEPTH);
	sorted = malloc(((size_t)n + 1) * sizeof(*sorted));
	fl->nodes = calloc(frames, sizeof(*fl->nodes));
	if (!sorted || !fl->nodes) {
		free(sorted);
		free(fl->nodes);
		fl->nodes = NULL;
		return -ENOMEM;
	}
	if (n)
		memcpy(sorted, recs, (size_t)n * sizeof(*sorted));
	qsort(sorted, (size_t)n, sizeof(*sorted), cmp_rec);
	root = &fl->nodes[0];
	fl->nnodes = 1;
	for (int i = 0; i < n; i++) {
		const struct stack_record *r = &sorted[i];
		struct fnode *node = root;
		int depth = r->nframes < FLAME_MAX_DEPTH ? r->nframes : FLAME_MAX_DEPTH;

		if (!rec_weight(fl->o, r))
			continue;
		root->count += r->count;
		root->latency_ns += r->latency_ns;
		for (int d = 0; d < depth; d++) {
			const struct stack_frame *fr = &r->frames[d];
			struct fnode *c = node->last;

			if (!c || cmp_frame(c->frame, fr) != 0) {
				c = &fl->nodes[fl->nnodes++];
				c->frame = fr;
				if (node->last)
					node->last->next = c;
				else
					node->child = c;
				node->last = c;
			}
			c->count += r->count;
			c->latency_ns += r->latency_ns;
			node = c;
		}
	}
	free(sorted);
	fl->total = weight(fl, root);
	return 0;
}

/* ---- colours ---- */

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* h in degrees, s and l in percent. */
static void hsl_hex(double h, double s, double l, char out[8])
{
	double c, x, m, r = 0, g = 0, b = 0, hp;

	s /= 100;
	l /= 100;
	c = (1 - (2 * l - 1 < 0 ? 1 - 2 * l : 2 * l - 1)) * s;
	hp = h / 60;
	while (hp >= 2)
		hp -= 2;
	x = c * (1 - (hp - 1 < 0 ? 1 - hp : hp - 1));
	switch ((int)(h / 60) % 6) {
	case 0:
		r = c, g = x;
		break;
	case 1:
		r = x, g = c;
		break;
	case 2:
		g = c, b = x;
		break;
	case 3:
		g = x, b = c;
		break;
	case 4:
		r = x, b = c;
		break;
	default:
		r = c, b = x;
		break;
	}
	m = l - c / 2;
	snprintf(out, 8, "#%02x%02x%02x", (unsigned int)((r + m) * 255 + 0.5),
		 (unsigned int)((g + m) * 255 + 0.5), (unsigned int)((b + m) * 255 + 0.5));
}

/* Fault leaves by their class: index into the legend's fault entries. */
static int fault_class(const char *name)
{
	if (strstr(name, "incomplete"))
		return 4;
	if (strstr(name, "write"))
		return 0;
	if (strstr(name, "read"))
		return 1;
	if (strstr(name, "exec"))
		return 2;
	return 3;
}

static const double fault_hue[5] = {218, 190, 272, 245, 220};
static const char *const fault_label[5] = {"write fault", "read fault", "exec fault", "fault",
					   "incomplete fault"};

static void frame_color(const struct fnode *n, char out[8])
{
	const struct stack_frame *fr = n->frame;
	uint32_t h = fr ? name_hash(fr->name) : 0;
	double v1 = (double)(h & 0xff) / 255, v2 = (double)(h >> 8 & 0xff) / 255;
	int fc;

	if (!fr) {
		hsl_hex(0, 0, 82, out);
		return;
	}
	switch (fr->type) {
	case FRAME_PROCESS:
		hsl_hex(262, 22, 72 + 8 * v1, out);
		break;
	case FRAME_USER:
		hsl_hex(78 + 70 * v1, 52, 52 + 12 * v2, out);
		break;
	case FRAME_KERNEL:
		hsl_hex(16 + 26 * v1, 85, 56 + 10 * v2, out);
		break;
	case FRAME_FAULT:
		fc = fault_class(fr->name);
		hsl_hex(fault_hue[fc] + 6 * v1, fc == 4 ? 12 : 70,
			strstr(fr->name, "major") ? 42 : 64 + 6 * v2, out);
		break;
	case FRAME_TLB:
		hsl_hex(312 + 24 * v1, 62, 60 + 8 * v2, out);
		break;
	default:
		hsl_hex(0, 0, 68 + 12 * v1, out);
		break;
	}
}

/* ---- text ---- */

void flame_format_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f \xc2\xb5s", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Write s shown in at most max_chars characters (code points): cut, then "..". */
static void put_fitted(FILE *f, const char *s, size_t max_chars)
{
	size_t chars = 0, i, cut = 0;

	for (i = 0; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) == 0x80)
			continue;
		if (chars == (max_chars >= 2 ? max_chars - 2 : 0))
			cut = i;
		chars++;
	}
	if (chars <= max_chars) {
		xml_write_text(f, s, i);
		return;
	}
	xml_write_text(f, s, cut);
	fputs("..", f);
}

/* A frame's name as --folded shows it (malloc'ed), "all" for the root. */
static char *display_name(const struct fnode *n)
{
	if (!n->frame)
		return strdup("all");
	return folded_escape(n->frame->name, strlen(n->frame->name));
}

static void write_frame(struct flame *fl, const struct fnode *n, double x, double w, int depth)
{
	char color[8], lat[32];
	char *name = display_name(n);
	double y = fl->graph_bottom - (double)(depth + 1) * FLAME_FRAME_H;
	double pct = fl->total ? 100.0 * (double)weight(fl, n) / (double)fl->total : 0;
	size_t fit = w > 6 ? (size_t)((w - 6) / FLAME_CHAR_WIDTH) : 0;

	frame_color(n, color);
	fprintf(fl->f, "<g><title>");
	xml_write_text(fl->f, name ? name : "?", name ? strlen(name) : 1);
	if (fl->o->latency) {
		flame_format_ns(n->latency_ns, lat, sizeof(lat));
		fprintf(fl->f, "\n%s latency in %llu %s (%.2f%%)", lat,
			(unsigned long long)n->count, fl->o->unit, pct);
	} else {
		fprintf(fl->f, "\n%llu %s (%.2f%%)", (unsigned long long)n->count, fl->o->unit,
			pct);
		if (n->latency_ns) {
			flame_format_ns(n->latency_ns, lat, sizeof(lat));
			fprintf(fl->f, ", %s latency", lat);
		}
	}
	fprintf(fl->f,
		"</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
		"rx=\"2\"/>",
		x, y, w, FLAME_FRAME_H - 1, color);
	/* The whole name, or three characters of it and "..", or nothing. */
	if (name && (fit >= 5 || (fit >= 1 && utf8_chars(name) <= fit))) {
		fprintf(fl->f, "<text x=\"%.2f\" y=\"%.0f\">", x + 3, y + FLAME_FRAME_H - 4.0);
		put_fitted(fl->f, name, fit);
		fputs("</text>", fl->f);
	}
	fputs("</g>\n", fl->f);
	free(name);
}

/*
 * The frames at least FLAME_MIN_WIDTH wide, depth first, children left to right; an elided
 * frame still takes its width, and nothing above it is visited. Without emit, only the depth
 * of the deepest such frame is found (the picture's height). Iterative: stacks are deep.
 */
static void walk(struct flame *fl, bool emit)
{
	const struct fnode *up_n[FLAME_MAX_DEPTH + 2];
	double up_x[FLAME_MAX_DEPTH + 2];
	const struct fnode *n = &fl->nodes[0];
	double x = XPAD;
	int depth = 0;

	for (;;) {
		double w = (double)weight(fl, n) * fl->scale;

		if (w >= FLAME_MIN_WIDTH) {
			if (emit)
				write_frame(fl, n, x, w, depth);
			else if (depth > fl->max_depth)
				fl->max_depth = depth;
			if (n->child && depth <= FLAME_MAX_DEPTH) {
				up_n[depth] = n;
				up_x[depth] = x;
				n = n->child; /* at its parent's x */
				depth++;
				continue;
			}
		}
		/* The next sibling, or up until there is one. */
		for (;;) {
			if (depth == 0)
				return;
			if (n->next) {
				x += (double)weight(fl, n) * fl->scale;
				n = n->next;
				break;
			}
			depth--;
			n = up_n[depth];
			x = up_x[depth];
		}
	}
}

/* One line of header text, centred, cut to the width; the whole line as its title. */
static void header_line(FILE *f, const char *text, int y, int size, bool bold)
{
	size_t fit = (size_t)((FLAME_WIDTH - 2 * XPAD) / (0.62 * size));

	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"%d\"%s><title>",
		FLAME_WIDTH / 2, y, size, bold ? " font-weight=\"bold\"" : "");
	xml_write_text(f, text, strlen(text));
	fputs("</title>", f);
	put_fitted(f, text, fit);
	fputs("</text>\n", f);
}

/* Swatches for the kinds of frame in the picture, left to right above the graph. */
static void legend(struct flame *fl, int y)
{
	static const struct {
		enum frame_type type;
		const char *label, *sample;
	} kinds[] = {
		{FRAME_PROCESS, "process", "p"},
		{FRAME_USER, "user", "u"},
		{FRAME_KERNEL, "kernel", "k"},
		{FRAME_TLB, "TLB invalidation", "t"},
		{FRAME_OTHER, "[unknown]/[truncated]", "o"},
	};
	struct stack_frame fr;
	struct fnode n = {.frame = &fr};
	char color[8];
	double x = XPAD;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!fl->used[kinds[i].type])
			continue;
		fr.type = kinds[i].type;
		fr.name = (char *)kinds[i].sample;
		frame_color(&n, color);
		fprintf(fl->f,
			"<rect x=\"%.0f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\" "
			"rx=\"2\"/><text x=\"%.0f\" y=\"%d\">%s</text>\n",
			x, y, color, x + 16, y + 10, kinds[i].label);
		x += 16 + (double)strlen(kinds[i].label) * FLAME_CHAR_WIDTH + 14;
	}
	for (int c = 0; c < 5; c++) {
		if (!fl->fault_used[c])
			continue;
		fr.type = FRAME_FAULT;
		fr.name = (char *)fault_label[c];
		frame_color(&n, color);
		fprintf(fl->f,
			"<rect x=\"%.0f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\" "
			"rx=\"2\"/><text x=\"%.0f\" y=\"%d\">%s</text>\n",
			x, y, color, x + 16, y + 10, fault_label[c]);
		x += 16 + (double)strlen(fault_label[c]) * FLAME_CHAR_WIDTH + 14;
	}
	if (fl->fault_used[0] || fl->fault_used[1] || fl->fault_used[2] || fl->fault_used[3])
		fprintf(fl->f, "<text x=\"%.0f\" y=\"%d\">(darker: major)</text>\n", x, y + 10);
}

int flame_svg_write(FILE *f, const struct stack_record *recs, int n, const struct flame_opts *o)
{
	struct flame fl = {.f = f, .o = o};
	int nsub = 0, top, height, err;

	if (n < 0)
		n = 0;
	err = build_tree(&fl, recs, n);
	if (err)
		return err;
	fl.scale = fl.total ? (FLAME_WIDTH - 2 * XPAD) / (double)fl.total : 0;
	if (fl.total)
		walk(&fl, false);
	/* The kinds of frame in the picture, for the legend (drawn before the frames). */
	for (size_t i = 1; i < fl.nnodes; i++) {
		const struct fnode *c = &fl.nodes[i];

		if ((double)weight(&fl, c) * fl.scale < FLAME_MIN_WIDTH)
			continue;
		fl.used[c->frame->type] = true;
		if (c->frame->type == FRAME_FAULT)
			fl.fault_used[fault_class(c->frame->name)] = true;
	}
	while (nsub < 4 && o->subtitle[nsub])
		nsub++;
	top = SUB_Y0 + nsub * SUB_STEP + LEGEND_GAP;
	fl.graph_bottom = top + 12 + LEGEND_GAP + (fl.max_depth + 1) * FLAME_FRAME_H;
	height = fl.graph_bottom + BOTTOM_PAD;

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n<title>",
		FLAME_WIDTH, height, FLAME_WIDTH, height);
	xml_write_text(f, o->title, strlen(o->title));
	fprintf(f,
		"</title>\n<desc>mmscope flame graph: root at the bottom, callers below "
		"callees, siblings in alphabetical order, width = %s; frames narrower than "
		"%.1f px are not drawn (their weight stays in their parent).</desc>\n",
		o->latency ? "latency" : "count", FLAME_MIN_WIDTH);
	fprintf(f,
		"<style>text{font-family:'DejaVu Sans Mono',monospace;font-size:%dpx;"
		"fill:#000}g:hover rect{stroke:#000;stroke-width:1}</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#fafaf5\"/>\n",
		FLAME_FONT_SIZE);
	header_line(f, o->title, TITLE_Y, 17, true);
	for (int i = 0; i < nsub; i++)
		header_line(f, o->subtitle[i], SUB_Y0 + i * SUB_STEP, FLAME_FONT_SIZE, false);
	legend(&fl, top);
	if (fl.total)
		walk(&fl, true);
	else
		fprintf(f,
			"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no stacks were "
			"recorded</text>\n",
			FLAME_WIDTH / 2, fl.graph_bottom - 4);
	fputs("</svg>\n", f);
	free(fl.nodes);
	return ferror(f) ? -EIO : 0;
}
