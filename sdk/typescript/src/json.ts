// JSON read as longrun's recorder reads a report (internal/core/step, the Go package's
// decodeReport): an object's members as their raw text, numbers exactly (JSON Schema's
// reading: 30.0 is the integer 30, 100.00000000000000001 is more than 100), sizes as compact
// JSON. JSON.parse alone would lose the numbers' exact values and the members' spelling.

/** Encoding/json's limit on nesting: a deeper document is not JSON to longrun. */
const maxNestingDepth = 10000;

/** An error in reading a report: longrun records it as invalid_report. */
export class JSONReadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JSONReadError";
  }
}

/** Checks that text is one JSON value, as encoding/json does; throws a JSONReadError when not. */
export function checkJSON(text: string): void {
  try {
    JSON.parse(text);
  } catch (e) {
    throw new JSONReadError(e instanceof Error ? e.message : String(e));
  }
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') i = skipString(text, i) - 1;
    else if (c === "{" || c === "[") {
      if (++depth > maxNestingDepth) throw new JSONReadError(`exceeded max depth of ${maxNestingDepth}`);
    } else if (c === "}" || c === "]") depth--;
  }
}

function isSpace(c: string | undefined): boolean {
  return c === " " || c === "\t" || c === "\n" || c === "\r";
}

function skipSpace(t: string, i: number): number {
  while (isSpace(t[i])) i++;
  return i;
}

// skipString is the index just after the string that starts at t[i] (a quote).
function skipString(t: string, i: number): number {
  for (i++; i < t.length; i++) {
    if (t[i] === "\\") i++;
    else if (t[i] === '"') return i + 1;
  }
  return i;
}

// skipValue is the index just after the (valid) JSON value that starts at t[i].
function skipValue(t: string, i: number): number {
  const c = t[i];
  if (c === '"') return skipString(t, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    for (; i < t.length; i++) {
      const d = t[i];
      if (d === '"') i = skipString(t, i) - 1;
      else if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        if (--depth === 0) return i + 1;
      }
    }
    return i;
  }
  while (i < t.length && !isSpace(t[i]) && t[i] !== "," && t[i] !== "}" && t[i] !== "]") i++;
  return i;
}

/** A JSON string's value, a lone surrogate read as U+FFFD (as encoding/json reads one). */
export function decodeString(raw: string): string {
  const s = JSON.parse(raw) as string;
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
}

/**
 * The members of the JSON object raw (valid JSON) as their raw text, by exact name (a later
 * member of the same name wins). Any other JSON value, null too, is a JSONReadError.
 */
export function members(raw: string, what: string): Map<string, string> {
  let i = skipSpace(raw, 0);
  if (raw[i] !== "{") throw new JSONReadError(`${what} must be a JSON object`);
  const m = new Map<string, string>();
  i = skipSpace(raw, i + 1);
  if (raw[i] === "}") return m;
  for (;;) {
    const keyEnd = skipString(raw, i);
    const key = decodeString(raw.slice(i, keyEnd));
    i = skipSpace(raw, keyEnd) + 1; // the colon
    i = skipSpace(raw, i);
    const end = skipValue(raw, i);
    m.set(key, raw.slice(i, end));
    i = skipSpace(raw, end);
    if (raw[i] !== ",") return m;
    i = skipSpace(raw, i + 1);
  }
}

/** The elements of the JSON array raw (valid JSON) as their raw text. */
export function elements(raw: string): string[] {
  let i = skipSpace(raw, 0);
  if (raw[i] !== "[") throw new JSONReadError("not a JSON array");
  const out: string[] = [];
  i = skipSpace(raw, i + 1);
  if (raw[i] === "]") return out;
  for (;;) {
    const end = skipValue(raw, i);
    out.push(raw.slice(i, end));
    i = skipSpace(raw, end);
    if (raw[i] !== ",") return out;
    i = skipSpace(raw, i + 1);
  }
}

/** raw (valid JSON) without the whitespace between its tokens, as encoding/json's Compact writes it. */
export function compact(raw: string): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '"') {
      const end = skipString(raw, i);
      out += raw.slice(i, end);
      i = end - 1;
    } else if (!isSpace(c)) out += c;
  }
  return out;
}

const numberSyntax = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?$/;
const maxExp = 2 ** 40;
const maxInt = 2n ** 63n - 1n;

/**
 * A JSON number read exactly: ±digits×10^exp, digits without leading or trailing zeros (""
 * for zero, -0 too). The recorder's decimal, in TypeScript.
 */
export class Decimal {
  private constructor(readonly neg: boolean, readonly digits: string, readonly exp: number, readonly raw: string) {}

  /** Reads raw, which must be a JSON number (not a string, not null). */
  static parse(raw: string, member: string): Decimal {
    const g = numberSyntax.exec(raw);
    if (!g) throw new JSONReadError(`${member} must be a number, not ${raw.slice(0, 40)}`);
    let exp = 0;
    for (const c of (g[5] ?? "").replace(/^0+/, "")) {
      exp = exp * 10 + Number(c);
      if (exp > maxExp) {
        exp = maxExp;
        break;
      }
    }
    if (g[4] === "-") exp = -exp;
    const frac = g[3] ?? "";
    const digits = g[2]! + frac;
    exp -= frac.length;
    let trimmed = digits.replace(/0+$/, "");
    exp += digits.length - trimmed.length;
    trimmed = trimmed.replace(/^0+/, "");
    if (trimmed === "") return new Decimal(false, "", 0, raw);
    return new Decimal(g[1] === "-", trimmed, exp, raw);
  }

  /** Whether it is an integer as JSON Schema counts one: 30.0 and 3e1 are. */
  integral(): boolean {
    return this.digits === "" || this.exp >= 0;
  }

  /** The number of digits of its integer part. */
  magnitude(): number {
    return this.digits.length + this.exp;
  }

  /** -1, 0 or +1 as it is less than, equal to or more than the non-negative integer n. */
  cmp(n: number): number {
    if (this.digits === "" && n === 0) return 0;
    if (this.digits === "") return -1;
    if (this.neg) return -1;
    if (n === 0) return 1;
    const e = Decimal.parse(String(n), "");
    const c = Math.sign(this.magnitude() - e.magnitude());
    if (c !== 0) return c;
    const l = Math.min(this.digits.length, e.digits.length);
    const a = this.digits.slice(0, l);
    const b = e.digits.slice(0, l);
    if (a !== b) return a < b ? -1 : 1;
    return Math.sign(this.digits.length - e.digits.length);
  }

  /** An integral decimal as an integer, saturated (as Go's int) at 2^63-1 and -2^63. */
  bigint(): bigint {
    if (this.digits === "") return 0n;
    const limit = maxInt + (this.neg ? 1n : 0n);
    let n = limit;
    if (this.magnitude() <= 19) {
      n = BigInt(this.digits + "0".repeat(this.exp));
      if (n > limit) n = limit;
    }
    return this.neg ? -n : n;
  }

  /** bigint() as the nearest number (exact up to 2^53). */
  int(): number {
    return Number(this.bigint());
  }

  /** The nearest float64, never -0. */
  float(): number {
    if (this.digits === "") return 0;
    const f = Number(this.raw);
    return f === 0 ? 0 : f;
  }
}
