/** An append-only list of doubles in a growable Float64Array: a million samples cost 8 MB, not 30. */
export class FloatList {
  private data = new Float64Array(256);
  private n = 0;

  get length(): number {
    return this.n;
  }

  push(value: number): void {
    if (this.n === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.n++] = value;
  }

  values(): Float64Array {
    return this.data.subarray(0, this.n);
  }
}
