fn main() {
    println!("plumb: in progress");
}
