// A Rust program probed by the names its author wrote (test-rust.sh): a
// method of a struct in a module, a generic function, and a trait method
// called through a trait object, each counting its own calls.
use std::env;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static ADDS: AtomicU64 = AtomicU64::new(0);
static MAXES: AtomicU64 = AtomicU64::new(0);
static AREAS: AtomicU64 = AtomicU64::new(0);

// A value the optimizer cannot see through (rustc 1.63 has no black_box).
fn opaque(x: u64) -> u64 {
    unsafe { std::ptr::read_volatile(&x) }
}

mod shop {
    pub struct Cart {
        pub total: u64,
    }

    impl Cart {
        #[inline(never)]
        pub fn add(&mut self, x: u64) -> u64 {
            super::ADDS.fetch_add(1, super::Relaxed);
            self.total += x;
            self.total
        }
    }

    pub trait Shape {
        fn area(&self) -> u64;
    }

    pub struct Square(pub u64);

    impl Shape for Square {
        #[inline(never)]
        fn area(&self) -> u64 {
            super::AREAS.fetch_add(1, super::Relaxed);
            self.0 * self.0
        }
    }

    #[inline(never)]
    pub fn biggest<T: PartialOrd + Copy>(a: T, b: T) -> T {
        super::MAXES.fetch_add(1, super::Relaxed);
        if a > b {
            a
        } else {
            b
        }
    }
}

fn main() {
    let rounds: u64 = env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let mut cart = shop::Cart { total: 0 };
    let shapes: Vec<Box<dyn shop::Shape>> = vec![Box::new(shop::Square(2)), Box::new(shop::Square(3))];
    let mut sum = 0;
    for i in 0..rounds {
        sum += cart.add(opaque(i));
        sum += shop::biggest(opaque(i), 2);
        for s in shapes.iter() {
            sum += s.area();
        }
    }
    println!(
        "adds={} maxes={} areas={} sum={}",
        ADDS.load(Relaxed),
        MAXES.load(Relaxed),
        AREAS.load(Relaxed),
        sum
    );
}
