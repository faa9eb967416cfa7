//! The initial database (clause 4.3.3), at the scale of [`TpccConfig`](super::TpccConfig):
//! items and warehouses first, then each warehouse (its stock, districts, customers with their
//! name-index entries and history, and orders with their lines and new-order records) on up to
//! two threads. Records go in through transactions of a few hundred inserts, on any engine.

use crate::engine::{Engine, TxWrite};

use super::random::{last_name, TpccRng, C_LAST_LOAD};
use super::schema::{
    key, name_key, Address, Customer, CustomerName, District, History, Item, Order, OrderLine, Record, Stock,
    Text, Warehouse, TREES,
};
use super::workload::{t, Tables, Tpcc, DISTRICTS};
use crate::workloads::WorkloadError;

/// Inserts per loading transaction.
const BATCH: usize = 400;

/// Buffers inserts and writes them a batch per transaction.
struct Loader<'a, E: Engine> {
    db: &'a E,
    tables: Tables<E::Table>,
    /// (tree, key, value, replace an existing key)
    pending: Vec<(usize, Vec<u8>, Vec<u8>, bool)>,
}

impl<E: Engine> Loader<'_, E> {
    fn insert(&mut self, tree: usize, key: &[u8], value: Vec<u8>) -> Result<(), WorkloadError> {
        self.add(tree, key, value, false)
    }

    fn add(&mut self, tree: usize, key: &[u8], value: Vec<u8>, replace: bool) -> Result<(), WorkloadError> {
        self.pending.push((tree, key.to_vec(), value, replace));
        if self.pending.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), WorkloadError> {
        let (pending, tables) = (&self.pending, &self.tables);
        self.db.transact(|tx| {
            for (tree, k, v, replace) in pending {
                if *replace {
                    tx.put(tables.tree(*tree), k, v)?;
                } else {
                    tx.insert(tables.tree(*tree), k, v)?;
                }
            }
            Ok(())
        })?;
        self.pending.clear();
        Ok(())
    }
}

fn address(rng: &mut TpccRng) -> Address {
    Address {
        name: rng.astring(6, 10),
        street_1: rng.astring(10, 20),
        street_2: rng.astring(10, 20),
        city: rng.astring(10, 20),
        state: rng.astring(2, 2),
        zip: rng.zip(),
    }
}

pub(super) fn load<E: Engine>(tpcc: &Tpcc, db: &E) -> Result<(), WorkloadError> {
    for name in TREES {
        db.create_table(name)?;
    }
    let cfg = &tpcc.config;
    let mut rng = TpccRng::new(cfg.seed);
    let mut l = Loader { db, tables: Tables::open(db)?, pending: Vec::new() };
    for i_id in 1..=cfg.items {
        let item = Item {
            im_id: rng.urand(1, 10_000),
            name: rng.astring(14, 24),
            price: rng.range_i64(100, 10_000),
            data: rng.data50(),
        };
        l.insert(t::ITEM, &key([i_id]), item.encode())?;
    }
    for w_id in 1..=cfg.warehouses {
        let w = Warehouse { address: address(&mut rng), tax: rng.range_i64(0, 2000), ytd: 30_000_000 };
        l.insert(t::WAREHOUSE, &key([w_id]), w.encode())?;
    }
    l.flush()?;
    let threads =
        std::thread::available_parallelism().map_or(1, usize::from).min(2).min(cfg.warehouses as usize);
    let results: Vec<Result<(), WorkloadError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|th| {
                s.spawn(move || -> Result<(), WorkloadError> {
                    let stream = tpcc.next_stream();
                    let mut rng = TpccRng::new(cfg.seed ^ (u64::from(stream) << 32) ^ 0x10AD);
                    let mut l = Loader { db, tables: Tables::open(db)?, pending: Vec::new() };
                    let mut sequence = 0;
                    for w_id in (1..=cfg.warehouses).filter(|w| (*w as usize - 1) % threads == th) {
                        load_warehouse(tpcc, &mut l, &mut rng, w_id, stream, &mut sequence)?;
                    }
                    l.flush()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(WorkloadError::Panicked("a loader thread".into()))))
            .collect()
    });
    results.into_iter().collect()
}

fn load_warehouse<E: Engine>(
    tpcc: &Tpcc,
    l: &mut Loader<'_, E>,
    rng: &mut TpccRng,
    w_id: u32,
    stream: u32,
    sequence: &mut u32,
) -> Result<(), WorkloadError> {
    let cfg = &tpcc.config;
    for i_id in 1..=cfg.items {
        let s = Stock {
            quantity: rng.range_i64(10, 100),
            dist: std::array::from_fn(|_| rng.astring(24, 24)),
            ytd: 0,
            order_cnt: 0,
            remote_cnt: 0,
            data: rng.data50(),
        };
        l.insert(t::STOCK, &key([w_id, i_id]), s.encode())?;
    }
    let now = 1;
    for d_id in 1..=DISTRICTS {
        let d = District {
            address: address(rng),
            tax: rng.range_i64(0, 2000),
            ytd: 3_000_000,
            next_o_id: cfg.customers + 1,
        };
        l.insert(t::DISTRICT, &key([w_id, d_id]), d.encode())?;
        for c_id in 1..=cfg.customers {
            let last = if c_id <= 1000 {
                last_name(c_id - 1)
            } else {
                last_name(rng.nurand(255, 0, cfg.max_name(), C_LAST_LOAD))
            };
            let c = Customer {
                first: rng.astring(8, 16),
                middle: Text::new(b"OE"),
                last,
                street_1: rng.astring(10, 20),
                street_2: rng.astring(10, 20),
                city: rng.astring(10, 20),
                state: rng.astring(2, 2),
                zip: rng.zip(),
                phone: rng.nstring(16),
                since: now,
                credit: Text::new(if rng.percent(10) { b"BC" } else { b"GC" }),
                credit_lim: 5_000_000,
                discount: rng.range_i64(0, 5000),
                balance: -1000,
                ytd_payment: 1000,
                payment_cnt: 1,
                delivery_cnt: 0,
                data: rng.astring(300, 500),
            };
            // Two customers may share first and last name: the index then keeps one of them.
            l.add(
                t::CUSTOMER_NAME,
                &name_key(w_id, d_id, c.last.as_bytes(), c.first.as_bytes()),
                CustomerName { c_id }.encode(),
                true,
            )?;
            l.insert(t::CUSTOMER, &key([w_id, d_id, c_id]), c.encode())?;
            let h = History {
                c_id,
                c_d_id: d_id,
                c_w_id: w_id,
                d_id,
                w_id,
                date: now,
                amount: 1000,
                data: rng.astring(12, 24),
            };
            l.insert(t::HISTORY, &key([stream, *sequence]), h.encode())?;
            *sequence += 1;
        }
        // Orders: one per customer, in a random permutation of the customers.
        let mut customers: Vec<u32> = (1..=cfg.customers).collect();
        for i in (1..customers.len()).rev() {
            let j = rng.urand(0, i as u32) as usize;
            customers.swap(i, j);
        }
        let delivered = cfg.delivered();
        for (o_id, c_id) in (1..).zip(customers) {
            let done = o_id <= delivered;
            let count = rng.urand(5, 15);
            let o = Order {
                c_id,
                entry_d: now,
                carrier_id: if done { rng.urand(1, 10) } else { 0 },
                ol_cnt: i64::from(count),
                all_local: 1,
            };
            l.insert(t::ORDER, &key([w_id, d_id, o_id]), o.encode())?;
            l.insert(t::ORDER_CUSTOMER, &key([w_id, d_id, c_id, o_id]), Vec::new())?;
            for n in 1..=count {
                let line = OrderLine {
                    i_id: rng.urand(1, cfg.items),
                    supply_w_id: w_id,
                    delivery_d: if done { now } else { 0 },
                    quantity: 5,
                    amount: if done { 0 } else { rng.range_i64(1, 999_999) },
                    dist_info: rng.astring(24, 24),
                };
                l.insert(t::ORDER_LINE, &key([w_id, d_id, o_id, n]), line.encode())?;
            }
            if !done {
                l.insert(t::NEW_ORDER, &key([w_id, d_id, o_id]), Vec::new())?;
            }
        }
    }
    Ok(())
}
